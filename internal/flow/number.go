package flow

import (
	"math"
	"regexp"
	"strconv"
	"strings"
)

// ParseNumber finds the first number in s, written in digits ("23", "3.5",
// "1,200", "-4") or in English words ("twenty three", "a hundred and five",
// "one thousand two hundred", "three point five", "minus two"). Words around
// the number are ignored, so "about twenty people" is 20. Ordinals ("first")
// are not numbers here; they are days of the month in ParseDate.
func ParseNumber(s string) (float64, bool) {
	v, _, _, ok := findNumber(tokenize(s))
	return v, ok
}

// findNumber returns the first number in toks and the tokens it spans.
func findNumber(toks []string) (v float64, start, end int, ok bool) {
	for i := range toks {
		if v, n, ok := numberAt(toks, i); ok {
			return v, i, i + n, true
		}
	}
	return 0, 0, 0, false
}

var digitsRE = regexp.MustCompile(`^-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?$`)

// digitNumber parses one token written in digits.
func digitNumber(tok string) (float64, bool) {
	if !digitsRE.MatchString(tok) {
		return 0, false
	}
	v, err := strconv.ParseFloat(strings.ReplaceAll(tok, ",", ""), 64)
	if err != nil || math.IsInf(v, 0) {
		return 0, false
	}
	return v, true
}

// numberAt reads a number starting exactly at toks[i] and says how many
// tokens it used.
func numberAt(toks []string, i int) (float64, int, bool) {
	if v, ok := digitNumber(toks[i]); ok {
		return v, 1, true
	}
	sign, j := 1.0, i
	if toks[j] == "minus" && j+1 < len(toks) {
		sign, j = -1, j+1
		if v, ok := digitNumber(toks[j]); ok && v >= 0 {
			return -v, 2, true
		}
	}
	n, used, ordinal := wordNumber(toks, j, false)
	if used == 0 || ordinal {
		return 0, 0, false
	}
	v := float64(n)
	j += used
	// "three point five": a decimal point followed by single digits.
	if j+1 < len(toks) && toks[j] == "point" {
		var frac strings.Builder
		k := j + 1
		for ; k < len(toks); k++ {
			d, ok := digitWord(toks[k])
			if !ok {
				break
			}
			frac.WriteByte(byte('0' + d))
		}
		if frac.Len() > 0 {
			if f, err := strconv.ParseFloat("0."+frac.String(), 64); err == nil {
				v += f
				j = k
			}
		}
	}
	return sign * v, j - i, true
}

// digitWord reads "zero" to "nine" (and "oh") as a single digit.
func digitWord(w string) (int, bool) {
	if w == "oh" || w == "o" {
		return 0, true
	}
	if c, ok := numberWords[w]; ok && c.class == classUnit && !c.ordinal {
		return int(c.value), true
	}
	return 0, false
}

type wordClass int

const (
	classUnit    wordClass = iota + 1 // zero to nine
	classTeen                         // ten to nineteen
	classTens                         // twenty, thirty, … ninety
	classHundred                      // hundred
	classScale                        // thousand, million, billion
)

type numberWord struct {
	value   int64
	class   wordClass
	ordinal bool
}

var numberWords = func() map[string]numberWord {
	m := map[string]numberWord{"hundred": {100, classHundred, false}}
	add := func(class wordClass, ordinal bool, first int64, step int64, words string) {
		for k, w := range strings.Fields(words) {
			m[w] = numberWord{first + int64(k)*step, class, ordinal}
		}
	}
	add(classUnit, false, 0, 1, "zero one two three four five six seven eight nine")
	add(classTeen, false, 10, 1, "ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen")
	add(classTens, false, 20, 10, "twenty thirty forty fifty sixty seventy eighty ninety")
	add(classUnit, true, 1, 1, "first second third fourth fifth sixth seventh eighth ninth")
	add(classTeen, true, 10, 1, "tenth eleventh twelfth thirteenth fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth")
	add(classTens, true, 20, 10, "twentieth thirtieth fortieth fiftieth sixtieth seventieth eightieth ninetieth")
	m["thousand"] = numberWord{1e3, classScale, false}
	m["million"] = numberWord{1e6, classScale, false}
	m["billion"] = numberWord{1e9, classScale, false}
	return m
}()

// wordNumber reads an English number in words starting at toks[i]: the
// longest prefix that is a well-formed number ("twenty three", "a hundred and
// five", "twelve hundred", "two thousand and twenty six"). With ordinals, a
// final ordinal word ends it ("twenty first" is 21, ordinal). It returns how
// many tokens it used (0: none).
func wordNumber(toks []string, i int, ordinals bool) (value int64, used int, ordinal bool) {
	const (
		stNone = iota
		stZero
		stUnit
		stTeen
		stTens
		stHundred
		stScale
	)
	var total, cur int64
	lastScale := int64(math.MaxInt64)
	state, hundred := stNone, false
	j, good := i, i
	if j+1 < len(toks) && toks[j] == "a" {
		if c := numberWords[toks[j+1]]; c.class == classHundred || c.class == classScale {
			cur, state, j, good = 1, stUnit, j+1, j+1
		}
	}
	for ; j < len(toks) && state != stZero; j++ {
		w := toks[j]
		if w == "and" {
			if state == stHundred || state == stScale {
				continue
			}
			break
		}
		c, ok := numberWords[w]
		if !ok || (c.ordinal && !ordinals) {
			break
		}
		switch c.class {
		case classUnit:
			switch {
			case c.value == 0 && state == stNone:
				state = stZero
			case c.value > 0 && (state == stNone || state == stTens || state == stHundred || state == stScale):
				cur += c.value
				state = stUnit
			default:
				return finish(total+cur, good-i, ordinal, state != stNone)
			}
		case classTeen, classTens:
			if state != stNone && state != stHundred && state != stScale {
				return finish(total+cur, good-i, ordinal, true)
			}
			cur += c.value
			state = stTeen
			if c.class == classTens {
				state = stTens
			}
		case classHundred:
			if (state != stUnit && state != stTeen && state != stTens) || hundred || cur >= 100 {
				return finish(total+cur, good-i, ordinal, true)
			}
			cur *= 100
			hundred, state = true, stHundred
		case classScale:
			if state == stNone || state == stZero || c.value >= lastScale {
				return finish(total+cur, good-i, ordinal, state != stNone)
			}
			total += cur * c.value
			cur, hundred, lastScale, state = 0, false, c.value, stScale
		}
		good = j + 1
		if c.ordinal {
			ordinal = true
			break
		}
	}
	return finish(total+cur, good-i, ordinal, state != stNone)
}

func finish(v int64, used int, ordinal, any bool) (int64, int, bool) {
	if !any || used <= 0 {
		return 0, 0, false
	}
	return v, used, ordinal
}
