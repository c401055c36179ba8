package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"switchboard/internal/id"
	"switchboard/internal/operator"
)

// userCreate creates a dashboard operator. The password is never a flag
// (flags show in ps and shell history): it comes from
// SWITCHBOARD_USER_PASSWORD, else from the first line of stdin.
func userCreate(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs, db := dbFlags("user create", stderr)
	org := fs.String("org", "", "organization id (required)")
	email := fs.String("email", "", "the operator's email, used to sign in (required)")
	name := fs.String("name", "", "the operator's name")
	if err := parse(fs, args, stdout); err != nil {
		return err
	}
	if *org == "" || *email == "" {
		return errors.New("user create: --org and --email are required")
	}
	addr, err := operator.NormalizeEmail(*email)
	if err != nil {
		return fmt.Errorf("user create: --email: %w", err)
	}
	pw, err := readPassword(stdin, stderr)
	if err != nil {
		return fmt.Errorf("user create: %w", err)
	}
	hash, err := operator.HashPassword(pw, 0)
	if err != nil {
		return fmt.Errorf("user create: %w", err)
	}
	d, err := openDB(ctx, *db, dbExisting, stderr)
	if err != nil {
		return err
	}
	defer d.Close()
	op := operator.Operator{ID: id.New(operator.IDPrefix), OrgID: *org, Email: addr, Name: strings.TrimSpace(*name),
		PasswordHash: hash, CreatedAt: id.Now()}
	if err := d.CreateOperator(ctx, op); err != nil {
		return fmt.Errorf("user create: %w", err)
	}
	fmt.Fprintf(stdout, "created operator %s in %s; sign in at /ui/login\n%s\n", addr, *org, op.ID)
	return nil
}

// readPassword takes the password from SWITCHBOARD_USER_PASSWORD, else
// the first line of stdin (typed, or piped from a secret store).
func readPassword(stdin io.Reader, stderr io.Writer) (string, error) {
	if v, ok := os.LookupEnv("SWITCHBOARD_USER_PASSWORD"); ok {
		return v, nil
	}
	if f, ok := stdin.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			fmt.Fprintf(stderr, "Password (at least %d characters; it is echoed, so prefer a pipe or SWITCHBOARD_USER_PASSWORD): ", operator.MinPasswordLen)
		}
	}
	line, err := bufio.NewReader(io.LimitReader(stdin, 4096)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read the password from stdin: %w", err)
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return "", errors.New("no password: set SWITCHBOARD_USER_PASSWORD or write it on stdin")
	}
	return line, nil
}

func userList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, db := dbFlags("user list", stderr)
	org := fs.String("org", "", "organization id (required)")
	if err := parse(fs, args, stdout); err != nil {
		return err
	}
	if *org == "" {
		return errors.New("user list: --org is required")
	}
	d, err := openDB(ctx, *db, dbExisting, stderr)
	if err != nil {
		return err
	}
	defer d.Close()
	ops, err := d.ListOperators(ctx, *org)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tEMAIL\tNAME\tCREATED")
	for _, op := range ops {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", op.ID, op.Email, op.Name, op.CreatedAt.Format(time.RFC3339))
	}
	return tw.Flush()
}

func userDelete(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, db := dbFlags("user delete", stderr)
	var opID string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		opID, args = args[0], args[1:] // USER_ID may come before the flags
	}
	if err := parse(fs, args, stdout); err != nil {
		return err
	}
	if opID == "" && fs.NArg() == 1 {
		opID = fs.Arg(0)
	} else if fs.NArg() != 0 || opID == "" {
		return errors.New("usage: switchboard user delete USER_ID [--db URL]")
	}
	d, err := openDB(ctx, *db, dbExisting, stderr)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.DeleteOperator(ctx, opID); err != nil {
		return fmt.Errorf("user delete: %w", err)
	}
	fmt.Fprintf(stdout, "deleted %s and signed it out\n", opID)
	return nil
}
