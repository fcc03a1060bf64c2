package io.millrace.source;

import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;

import java.net.ConnectException;
import java.net.UnknownHostException;
import java.sql.SQLException;

/** Turns driver errors into {@link MillraceException}s whose message names the fix. */
public final class PgErrors {
    private PgErrors() {
    }

    /**
     * @param what what was being done, e.g. "connecting to the source 127.0.0.1:5432/app as 'cdc'"
     */
    public static MillraceException translate(String what, SQLException e) {
        String state = e.getSQLState() == null ? "" : e.getSQLState();
        String msg = e.getMessage() == null ? "" : e.getMessage().strip();
        if (msg.endsWith(".")) {
            msg = msg.substring(0, msg.length() - 1); // a sentence of ours follows: no "..".
        }
        if (state.equals("28P01") || msg.contains("password authentication failed")) {
            return new MillraceException(Kind.AUTHENTICATION, what + " failed: the password was rejected."
                    + " Check the user name and the password (source.password_env / source.password_file).", e);
        }
        if (io.millrace.core.PgMessages.noPasswordGiven(msg)) {
            // pgjdbc's own refusal (SQLSTATE 08004), no connection problem: before, retried with "check that the server is
            // running" (found trying a server with scram authentication)
            return new MillraceException(Kind.AUTHENTICATION, what + " failed: the server asks for a password and none is set."
                    + " Fix: name the environment variable holding it in source.password_env (or a file in source.password_file)", e);
        }
        if (state.equals("28000")) {
            return new MillraceException(Kind.AUTHENTICATION, what + " failed: " + msg
                    + ". Check pg_hba.conf allows this user (for replication: a 'replication' line) and the user name.", e);
        }
        if (state.equals("3D000")) {
            return new MillraceException(Kind.CONFIG, what + " failed: " + msg + ". Check the database name (source.database).", e);
        }
        if (state.equals("42501")) {
            return new MillraceException(Kind.PERMISSION, what + " failed: " + msg, e);
        }
        if (state.equals("55006")) {
            return new MillraceException(Kind.SLOT_IN_USE, what + " failed: " + msg
                    + ". Another process (perhaps another Millrace) is reading this slot; stop it or choose another slot.", e);
        }
        if (causedBy(e, java.security.cert.CertificateException.class) || msg.contains("could not be verified by hostnameverifier")) {
            // A certificate that does not verify fails the same way on every attempt: a configuration error, not retried.
            boolean host = msg.contains("hostnameverifier");
            return new MillraceException(Kind.CONFIG, what + " failed: TLS: " + (host
                    ? "the server's certificate does not name the host Millrace connects to (" + msg + "). With source.ssl.mode"
                    + " verify-full, source.host must be a name (or IP address) in the certificate; use the name the certificate"
                    + " was issued for, or verify-ca to check the chain only"
                    : "the server's certificate could not be verified (" + msg + "). Check source.ssl.root_cert: it must be the CA"
                    + " certificate that signed the server's certificate"), e);
        }
        if (msg.contains("server does not support SSL")) {
            return new MillraceException(Kind.CONFIG, what + " failed: TLS: " + msg + ". Turn ssl on in the server's configuration,"
                    + " or set source.ssl.mode to prefer or disable", e);
        }
        if (state.startsWith("08") || causedBy(e, ConnectException.class) || causedBy(e, UnknownHostException.class)) {
            return new MillraceException(Kind.CONNECTION, what + " failed: " + io.millrace.core.PgMessages.withoutDriverAdvice(msg)
                    + ". Check that the server is running and reachable at that host and port.", e);
        }
        if ((state.equals("40001") || state.equals("40P01")) && msg.contains("conflict with recovery")) {
            // source.capture_from: standby — a lock, or the removal of rows or a whole table, replayed from the primary
            return new MillraceException(Kind.CONNECTION, what + " failed: the standby cancelled it to replay a change from the"
                    + " primary that conflicts with it (" + msg + "): a lock such as TRUNCATE, ALTER TABLE, or VACUUM truncating a table,"
                    + " which waits at most max_standby_streaming_delay for the read. Retried; if it recurs, raise"
                    + " max_standby_streaming_delay on the standby (-1: replay waits for the read) while the snapshot runs", e);
        }
        if (state.equals("57P01") || state.equals("57P02") || state.equals("57P03")) {
            return new MillraceException(Kind.CONNECTION, what + " failed: the server is shutting down or starting up (" + msg + ")", e);
        }
        MillraceException busy = turnedAway(what, state, msg, e);
        if (busy != null) {
            return busy;
        }
        return new MillraceException(Kind.SOURCE_SETUP, what + " failed: " + msg + (state.isEmpty() ? "" : " [SQLSTATE " + state + "]"), e);
    }

    /**
     * The server turned the session away for a while: a lock another session held past {@code lock_timeout} (an ALTER TABLE,
     * VACUUM FULL, REINDEX, TRUNCATE or LOCK TABLE of a captured table), no connection left (a role's or the database's
     * CONNECTION LIMIT, {@code max_connections}), a statement cancelled (a DBA's {@code pg_cancel_backend}), a deadlock.
     * Retried as a connection's failure. They were a set-up error (exit 6, not retried): a lock held by the application's
     * own migration while a pipeline reconnected stopped it for good, its slot keeping the WAL (found trying a server set up
     * as in production). Null for any other error.
     */
    private static MillraceException turnedAway(String what, String state, String msg, SQLException e) {
        String why = switch (state) {
            case "55P03" -> "a lock another session holds was not granted within lock_timeout (an ALTER TABLE, VACUUM FULL, REINDEX,"
                    + " TRUNCATE or LOCK TABLE of a captured table). Retried; if it recurs, find the session holding it in pg_locks and"
                    + " pg_stat_activity, or raise lock_timeout for Millrace's role (ALTER ROLE ... SET lock_timeout)";
            case "53300" -> "the server has no connection left for Millrace (max_connections, or a CONNECTION LIMIT of the role or the"
                    + " database). Retried; Millrace needs several at once (the stream, the pipeline's lock, the slot's monitor, one per"
                    + " snapshot reader): raise the limit";
            case "57014" -> "the statement was cancelled (pg_cancel_backend, or a statement_timeout). Retried";
            case "40P01", "40001" -> "it met a deadlock or a serialization failure with another session. Retried";
            default -> null;
        };
        return why == null ? null : new MillraceException(Kind.CONNECTION, what + " failed: " + msg + " [SQLSTATE " + state + "]: " + why, e);
    }

    private static boolean causedBy(Throwable t, Class<? extends Throwable> type) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (type.isInstance(c)) {
                return true;
            }
        }
        return false;
    }
}
