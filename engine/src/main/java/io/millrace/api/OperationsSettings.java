package io.millrace.api;

import io.millrace.core.Secret;
import io.millrace.engine.config.EngineConfig;
import io.millrace.engine.config.Limit;
import io.millrace.engine.config.Secrets;

import java.nio.file.Path;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * How the engine is watched and restarted: slot monitoring, health bounds, automatic restarts after a transient
 * failure, and the settings of the HTTP endpoint the {@code millrace} command serves. Immutable; made by
 * {@link #builder()}, with the checks and messages of the YAML configuration's {@code operations:} section.
 */
public final class OperationsSettings {
    /** How log lines are written. */
    public enum LogFormat {
        /** One readable line. */
        TEXT,
        /** One JSON object per line. */
        JSON
    }

    private final int monitorIntervalMs;
    private final int retainedWalWarnMb;
    private final String httpHost;
    private final int httpPort;
    private final int retryInitialMs;
    private final int retryMaxMs;
    private final int retryAttempts;
    private final int retryAttemptsOnceRunning;
    private final Secret controlToken;
    private final int readyMaxLagS;
    private final int readyMaxLagMb;
    private final int liveMaxStallS;
    private final LogFormat logFormat;

    private OperationsSettings(Builder b, Secret controlToken) {
        this.monitorIntervalMs = b.monitorIntervalMs;
        this.retainedWalWarnMb = b.retainedWalWarnMb;
        this.httpHost = b.httpHost;
        this.httpPort = b.httpPort;
        this.retryInitialMs = b.retryInitialMs;
        this.retryMaxMs = b.retryMaxMs;
        this.retryAttempts = b.retryAttempts;
        this.retryAttemptsOnceRunning = b.retryAttemptsOnceRunning;
        this.controlToken = controlToken;
        this.readyMaxLagS = b.readyMaxLagS;
        this.readyMaxLagMb = b.readyMaxLagMb;
        this.liveMaxStallS = b.liveMaxStallS;
        this.logFormat = b.logFormat;
    }

    /** A builder with the defaults of the YAML configuration. */
    public static Builder builder() {
        return new Builder();
    }

    /** The defaults. */
    public static OperationsSettings defaults() {
        return builder().build();
    }

    /** How often the slot's position and retained WAL are sampled ({@code monitor_interval_ms}). */
    public int monitorIntervalMs() {
        return monitorIntervalMs;
    }

    /** Retained WAL above which a warning is logged ({@code retained_wal_warn_mb}). */
    public int retainedWalWarnMb() {
        return retainedWalWarnMb;
    }

    /** Where the HTTP endpoint listens ({@code http_host}). */
    public String httpHost() {
        return httpHost;
    }

    /** The HTTP endpoint's port ({@code http_port}; 0: none). */
    public int httpPort() {
        return httpPort;
    }

    /** The first wait before a restart ({@code retry.initial_ms}). */
    public int retryInitialMs() {
        return retryInitialMs;
    }

    /** The longest wait before a restart ({@code retry.max_ms}). */
    public int retryMaxMs() {
        return retryMaxMs;
    }

    /**
     * Restarts in a row before giving up while no attempt of this run has run for a minute ({@code retry.attempts}; 0: no
     * limit): a start that never worked fails.
     */
    public int retryAttempts() {
        return retryAttempts;
    }

    /** Restarts in a row before giving up once an attempt has run for a minute ({@code retry.attempts_once_running}; 0: no limit). */
    public int retryAttemptsOnceRunning() {
        return retryAttemptsOnceRunning;
    }

    /** The bearer token HTTP control calls must carry, or {@link Secret#NONE} (control calls refused). */
    public Secret controlToken() {
        return controlToken;
    }

    /** {@code /readyz} answers 503 while the lag exceeds this many seconds ({@code ready_max_lag_s}). */
    public int readyMaxLagS() {
        return readyMaxLagS;
    }

    /** ... or this many MB of WAL ({@code ready_max_lag_mb}; 0: no bound). */
    public int readyMaxLagMb() {
        return readyMaxLagMb;
    }

    /** {@code /healthz} answers 503 after this long without progress while there is work ({@code live_max_stall_s}; 0: never). */
    public int liveMaxStallS() {
        return liveMaxStallS;
    }

    /** {@code log_format}. */
    public LogFormat logFormat() {
        return logFormat;
    }

    /** Builds {@link OperationsSettings}; each setter checks its value, naming the setting. Not thread-safe. */
    public static final class Builder {
        private static final EngineConfig.Operations DEFAULTS = EngineConfig.Operations.defaults();
        private int monitorIntervalMs = (int) DEFAULTS.monitorIntervalMillis();
        private int retainedWalWarnMb = (int) (DEFAULTS.retainedWalWarnBytes() >> 20);
        private String httpHost = DEFAULTS.httpHost();
        private int httpPort = DEFAULTS.httpPort();
        private int retryInitialMs = (int) DEFAULTS.retry().initialMillis();
        private int retryMaxMs = (int) DEFAULTS.retry().maxMillis();
        private int retryAttempts = DEFAULTS.retry().attempts();
        private int retryAttemptsOnceRunning = DEFAULTS.retry().attemptsOnceRunning();
        private Secret controlToken = Secret.NONE;
        private String controlTokenEnv;
        private Path controlTokenFile;
        private Function<String, String> env = System::getenv;
        private Consumer<String> unreadableToken;
        private int readyMaxLagS = (int) (DEFAULTS.health().readyMaxLagMillis() / 1000);
        private int readyMaxLagMb = (int) (DEFAULTS.health().readyMaxLagBytes() >> 20);
        private int liveMaxStallS = (int) (DEFAULTS.health().liveMaxStallMillis() / 1000);
        private LogFormat logFormat = LogFormat.TEXT;

        private Builder() {
        }

        public Builder monitorIntervalMs(int millis) {
            this.monitorIntervalMs = Check.range(Limit.MONITOR_INTERVAL_MS, "operations.monitor_interval_ms", millis);
            return this;
        }

        public Builder retainedWalWarnMb(int mb) {
            this.retainedWalWarnMb = Check.range(Limit.RETAINED_WAL_WARN_MB, "operations.retained_wal_warn_mb", mb);
            return this;
        }

        public Builder httpHost(String host) {
            this.httpHost = Check.text("operations.http_host", host);
            return this;
        }

        /**
         * The port of the HTTP status, metrics and control endpoints that {@code millrace run} serves; an embedded
         * pipeline serves none (it logs so at its start): read {@link Millrace#status()} there.
         */
        public Builder httpPort(int port) {
            this.httpPort = Check.range(Limit.HTTP_PORT, "operations.http_port", port);
            return this;
        }

        public Builder retryInitialMs(int millis) {
            this.retryInitialMs = Check.range(Limit.RETRY_MS, "operations.retry.initial_ms", millis);
            return this;
        }

        public Builder retryMaxMs(int millis) {
            this.retryMaxMs = Check.range(Limit.RETRY_MS, "operations.retry.max_ms", millis);
            return this;
        }

        public Builder retryAttempts(int attempts) {
            this.retryAttempts = Check.range(Limit.RETRY_ATTEMPTS, "operations.retry.attempts", attempts);
            return this;
        }

        public Builder retryAttemptsOnceRunning(int attempts) {
            this.retryAttemptsOnceRunning = Check.range(Limit.RETRY_ATTEMPTS, "operations.retry.attempts_once_running", attempts);
            return this;
        }

        /** The control token itself; at least 16 characters (checked by {@link #build()}). */
        public Builder controlToken(Secret token) {
            this.controlToken = Check.given("operations.control_token", token);
            return this;
        }

        /** The environment variable holding the control token ({@code control_token_env}); read by {@link #build()}. */
        public Builder controlTokenEnv(String variable) {
            this.controlTokenEnv = Check.text("operations.control_token_env", variable);
            return this;
        }

        /** The file holding the control token ({@code control_token_file}); read by {@link #build()}. */
        public Builder controlTokenFile(Path file) {
            this.controlTokenFile = Check.given("operations.control_token_file", file);
            return this;
        }

        /** Where {@link #controlTokenEnv} is looked up; {@code System::getenv} by default. */
        public Builder environment(Function<String, String> env) {
            this.env = Check.given("environment", env);
            return this;
        }

        /**
         * For tools that only read the source: a control token that cannot be read (its variable unset, its file
         * unreadable) is then no error; its problem goes to {@code problems} and no token is set.
         */
        public Builder tolerateUnreadableControlToken(Consumer<String> problems) {
            this.unreadableToken = Check.given("problems", problems);
            return this;
        }

        public Builder readyMaxLagS(int seconds) {
            this.readyMaxLagS = Check.range(Limit.READY_MAX_LAG_S, "operations.ready_max_lag_s", seconds);
            return this;
        }

        public Builder readyMaxLagMb(int mb) {
            this.readyMaxLagMb = Check.range(Limit.READY_MAX_LAG_MB, "operations.ready_max_lag_mb", mb);
            return this;
        }

        public Builder liveMaxStallS(int seconds) {
            this.liveMaxStallS = Check.range(Limit.LIVE_MAX_STALL_S, "operations.live_max_stall_s", seconds);
            return this;
        }

        public Builder logFormat(LogFormat format) {
            this.logFormat = Check.given("operations.log_format", format);
            return this;
        }

        /** Checks the combination, reads the control token from its variable or file, and returns the settings. */
        public OperationsSettings build() {
            if (retryMaxMs < retryInitialMs) {
                throw Check.error("operations.retry.max_ms", "(" + retryMaxMs + ") must be at least operations.retry.initial_ms ("
                        + retryInitialMs + ")");
            }
            if (controlTokenEnv != null && controlTokenFile != null) {
                throw Secrets.both("operations.control_token_env", "operations.control_token_file");
            }
            String key = controlTokenEnv != null ? "operations.control_token_env" : controlTokenFile != null
                    ? "operations.control_token_file" : "operations.control_token";
            if (!controlToken.isEmpty() && !key.equals("operations.control_token")) {
                throw Secrets.both("operations.control_token", key);
            }
            Secret token = controlToken;
            try {
                if (controlTokenEnv != null) {
                    token = Secrets.tokenFromEnv("operations.control_token_env", controlTokenEnv, env);
                } else if (controlTokenFile != null) {
                    token = Secrets.fromFile("operations.control_token_file", controlTokenFile);
                }
            } catch (io.millrace.core.MillraceException e) {
                if (unreadableToken == null) {
                    throw e;
                }
                unreadableToken.accept(e.getMessage());
                token = Secret.NONE;
            }
            if (!token.isEmpty() && token.reveal().length() < 16) {
                throw Check.error(key, "holds a token of " + token.reveal().length() + " characters; use at least 16 (e.g. openssl rand -hex 24)");
            }
            return new OperationsSettings(this, token);
        }
    }
}
