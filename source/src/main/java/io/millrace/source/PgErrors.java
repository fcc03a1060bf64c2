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
        return new MillraceException(Kind.SOURCE_SETUP, what + " failed: " + msg + (state.isEmpty() ? "" : " [SQLSTATE " + state + "]"), e);
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
