package io.millrace.sink.postgres;

import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.change.ChangeEvent;
import io.millrace.core.schema.TableRef;

import java.sql.SQLException;

/** Turns driver errors into {@link MillraceException}s that name the destination, the table and the fix. */
final class Errors {
    private Errors() {
    }

    /** Whether the error means the connection is gone (the session and its transaction with it). */
    static boolean connectionLost(SQLException e) {
        String state = e.getSQLState();
        return state != null && (state.startsWith("08") || state.startsWith("57P"));
    }

    static MillraceException apply(String destination, String where, TableRef target, TableRef source,
                                   ChangeEvent first, SQLException e) {
        String what = "destination '" + destination + "': could not apply changes to table " + target + " (source "
                + source + ", run from " + first.position() + "): " + message(e);
        if (connectionLost(e)) {
            return new MillraceException(Kind.CONNECTION, what + ". The connection to PostgreSQL at " + where
                    + " was lost; the batch was not committed. Check that the server there is up; the next attempt"
                    + " reconnects.", e);
        }
        if ("42501".equals(e.getSQLState())) {
            return new MillraceException(Kind.PERMISSION, what + ". Grant the destination user the privileges"
                    + " it needs on that schema and table (CREATE, INSERT, UPDATE, DELETE, TRUNCATE).", e);
        }
        if ("23514".equals(e.getSQLState()) && message(e).contains("no partition of relation")) {
            // a partition the source has and the destination's copy of the partitioned table lacks (created since)
            return new MillraceException(Kind.SINK, what + ". Fix: create the partition these rows belong to on the destination"
                    + " too (as on the source: CREATE TABLE ... PARTITION OF " + target.sql() + " FOR VALUES ...). " + START_AGAIN, e);
        }
        if ("23503".equals(e.getSQLState())) {
            // a foreign key of the destination's (a schema made with pg_dump --schema-only): see TargetTables.refuseForeignKeys
            return new MillraceException(Kind.TARGET_SETUP, what + ". A foreign key on the destination. When it is between two tables"
                    + " Millrace writes: " + TargetTables.FOREIGN_KEY_FIX + ". When it references a table only the destination has,"
                    + " that table lacks the row named above: add it there. " + START_AGAIN, e);
        }
        if ("22P02".equals(e.getSQLState()) && message(e).contains("invalid input value for enum")) {
            // a value added to an enum on the source (ALTER TYPE ... ADD VALUE) since the type was made on the destination:
            // the stream carries no change of types (found by a user following a migration)
            return typeNotStreamed(what, "add the value to the type on the destination too, as on the source and in the same place"
                    + " among the others (ALTER TYPE ... ADD VALUE '...' BEFORE or AFTER '...', as the source's \\dT+ lists them: the"
                    + " order is how the values compare and sort; a value the source renamed with RENAME VALUE is renamed there too,"
                    + " not added)", e);
        }
        if ("22P02".equals(e.getSQLState()) && message(e).contains("malformed record literal")) {
            // a composite type changed on the source (ALTER TYPE ... ADD / DROP ATTRIBUTE) since it was made on the
            // destination: the stream carries no change of types (found by a user following a migration)
            return typeNotStreamed(what, "give the composite type on the destination the source's attributes, in the source's"
                    + " order (ALTER TYPE ... ADD ATTRIBUTE / DROP ATTRIBUTE, as the source's \\d of the type lists them)", e);
        }
        return new MillraceException(Kind.SINK, what, e);
    }

    /** The end of the fix for a batch the destination refused as a whole: nothing of it was applied. */
    private static final String START_AGAIN = "Then start again: nothing of this batch was applied, and the stream goes on from it";

    /** A value the destination's copy of a type refuses: the type changed on the source, and the stream carries no DDL. */
    private static MillraceException typeNotStreamed(String what, String fix, SQLException e) {
        return new MillraceException(Kind.SINK, what + ". Fix: " + fix + "; the stream carries no change of types. " + START_AGAIN, e);
    }

    /** The server's message with its detail and hint, on one line. */
    static String message(SQLException e) {
        String m = e.getMessage();
        if (m == null) {
            return e.getClass().getSimpleName();
        }
        return m.replace('\n', ' ').replaceAll(" {2,}", " ").strip();
    }
}
