-- Twilio connections (issue 10): a connection of provider 'twilio' keeps
-- its Account SID in phone_connections.username and its auth token sealed
-- in password_sealed (address, transport, numbers and inbound sources stay
-- empty: the account's numbers are Twilio's). A purchase through one
-- remembers the connection, and whether the number was imported (already
-- the account's: releasing it leaves it in the account) or bought.

-- +goose Up
ALTER TABLE purchases ADD COLUMN imported BOOLEAN NOT NULL DEFAULT FALSE;

-- +goose Down
ALTER TABLE purchases DROP COLUMN imported;
