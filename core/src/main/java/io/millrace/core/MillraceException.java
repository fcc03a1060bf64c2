package io.millrace.core;

/**
 * The one exception type of Millrace. Its {@link Kind} says what went wrong, whether a retry can
 * help and which exit code the CLI returns. Messages name the object (slot, table, setting, LSN)
 * and the fix; they never contain a secret.
 */
public class MillraceException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public enum Kind {
        /** A configuration file, key or value is wrong. */
        CONFIG(2, false),
        /**
         * The source or destination cannot be reached, or the connection dropped, or the server turned the session away for a
         * while (a lock not granted within lock_timeout, no connection left, a statement cancelled): retried.
         */
        CONNECTION(3, true),
        /** Wrong user name or password. */
        AUTHENTICATION(4, false),
        /** Missing privilege (REPLICATION, SELECT, CREATE ...). */
        PERMISSION(5, false),
        /** The source is not set up for logical replication (wal_level, publication, tables, limits). */
        SOURCE_SETUP(6, false),
        /** The replication slot is in use by another process. */
        SLOT_IN_USE(7, true),
        /** A checkpoint belongs to another system, database, slot, publication or destination. */
        IDENTITY(8, false),
        /** A pgoutput message or value could not be decoded. */
        DECODE(9, false),
        /** A destination failed to write. */
        SINK(10, true),
        /**
         * A destination is not set up for the pipeline (a postgres destination's foreign key between tables it writes), or a
         * migration's target is not ready: an older major version, a missing extension, tables already there.
         */
        TARGET_SETUP(11, false),
        /** A migration's source and target differ (verify found divergent chunks). */
        DIVERGED(12, false),
        /** A bug: an invariant was found broken. */
        INTERNAL(70, false);

        private final int exitCode;
        private final boolean retryable;

        Kind(int exitCode, boolean retryable) {
            this.exitCode = exitCode;
            this.retryable = retryable;
        }

        public int exitCode() {
            return exitCode;
        }

        public boolean retryable() {
            return retryable;
        }
    }

    private final Kind kind;

    public MillraceException(Kind kind, String message) {
        super(message);
        this.kind = kind;
    }

    public MillraceException(Kind kind, String message, Throwable cause) {
        super(message, cause);
        this.kind = kind;
    }

    public Kind kind() {
        return kind;
    }

    public boolean retryable() {
        return kind.retryable();
    }
}
