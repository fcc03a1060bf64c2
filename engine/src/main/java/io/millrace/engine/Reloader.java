package io.millrace.engine;

import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.schema.Ident;
import io.millrace.core.schema.TableRef;
import io.millrace.engine.Engine.State;
import io.millrace.engine.config.EngineConfig;
import io.millrace.snapshot.online.OnlineSnapshotter;
import io.millrace.source.Catalog;
import io.millrace.source.PgErrors;
import io.millrace.source.SourceConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.lang.reflect.RecordComponent;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * A reload of the configuration while streaming ({@code SIGHUP}, {@code POST /reload}): what may change
 * ({@link #refusal}) and how a new table selection takes effect ({@link #apply}).
 *
 * <p>Only {@code source.tables} and {@code source.exclude_tables} change without a restart. Tables the new selection
 * adds join as a table created while streaming does ({@link TableJoiner}: a join message each, so they are copied
 * online from the position the stream handles it at — INV: RESUME, HANDOVER). Tables it leaves out stop being captured
 * at once: their online copies stop, and they leave the publication when Millrace manages it, so the stream carries
 * their changes up to that position and none after (no change lost or repeated inside the capture; the destinations
 * keep the rows they hold).
 */
final class Reloader {
    private static final Logger LOG = LoggerFactory.getLogger(Reloader.class);

    private Reloader() {
    }

    /** The first setting that differs between {@code running} and {@code next} other than the table selection, or null. */
    static String refusal(EngineConfig running, EngineConfig next) {
        SourceConfig a = running.source();
        SourceConfig b = next.source();
        for (RecordComponent c : SourceConfig.class.getRecordComponents()) {
            String n = c.getName();
            if (!n.equals("tables") && !n.equals("excludeTables") && !Objects.equals(get(c, a), get(c, b))) {
                return "source." + switch (n) {
                    case "createPublication" -> "create_publication";
                    case "statusInterval" -> "status_interval_ms";
                    case "jdbcProperties" -> "ssl or socket_timeout_s";
                    case "newTablesPoll" -> "new_tables_poll_s";
                    case "password" -> "password_env or password_file (the password)";
                    default -> n;
                };
            }
        }
        for (RecordComponent c : EngineConfig.class.getRecordComponents()) {
            String n = c.getName();
            if (n.equals("source") || n.equals("transforms") || Objects.equals(get(c, running), get(c, next))) {
                continue;
            }
            if (n.equals("destinations")) {
                return destination(running, next);
            }
            String section = switch (n) {
                case "snapshotMode" -> "snapshot.mode";
                case "online" -> "snapshot.online";
                case "spillDir" -> "pipeline.spill_dir";
                default -> n;
            };
            return section + key(get(c, running), get(c, next)); // the setting inside it (it said "pipeline", found by a user)
        }
        return null;
    }

    /** The YAML keys of the settings inside {@code pipeline:} and {@code operations:}, by their record component. */
    private static final java.util.Map<String, String> KEYS = java.util.Map.ofEntries(java.util.Map.entry("budgetBytes", "memory_budget_mb"),
            java.util.Map.entry("batchBytes", "batch_kb"), java.util.Map.entry("maxBatchBytes", "batch_kb"),
            java.util.Map.entry("lingerMillis", "linger_ms"), java.util.Map.entry("decoders", "decoders"),
            java.util.Map.entry("decodeChunkRows", "decode_chunk_rows"), java.util.Map.entry("monitorIntervalMillis", "monitor_interval_ms"),
            java.util.Map.entry("retainedWalWarnBytes", "retained_wal_warn_mb"), java.util.Map.entry("httpHost", "http_host"),
            java.util.Map.entry("httpPort", "http_port"), java.util.Map.entry("retry", "retry"),
            java.util.Map.entry("controlToken", "control_token_env or control_token_file"),
            java.util.Map.entry("health", "ready_max_lag_s, ready_max_lag_mb or live_max_stall_s"),
            java.util.Map.entry("logFormat", "log_format"));

    /** ".key" of the first setting that differs between two sections' records, when known; "" otherwise. */
    private static String key(Object a, Object b) {
        if (a == null || b == null || !a.getClass().isRecord() || a.getClass() != b.getClass()) {
            return "";
        }
        for (RecordComponent rc : a.getClass().getRecordComponents()) {
            if (!Objects.equals(get(rc, a), get(rc, b))) {
                String k = KEYS.get(rc.getName());
                return k == null ? "" : "." + k;
            }
        }
        return "";
    }

    private static String destination(EngineConfig running, EngineConfig next) {
        List<?> a = running.destinations();
        List<?> b = next.destinations();
        if (a.size() != b.size()) {
            return "destinations (" + a.size() + " before, " + b.size() + " now)";
        }
        for (int i = 0; i < a.size(); i++) {
            if (!Objects.equals(a.get(i), b.get(i))) {
                return "destinations[" + i + "] ('" + running.destinations().get(i).name() + "')";
            }
        }
        return "destinations";
    }

    private static Object get(RecordComponent c, Object record) {
        try {
            return c.getAccessor().invoke(record);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * Makes {@code next} the table selection of the engine of {@code ctx}, which must stream; returns what changed, for the
     * log and the caller. Checked before anything changes: a table {@code next} names (not a pattern) must exist.
     * Any thread; one reload at a time, never while a table joins.
     */
    static String apply(EngineContext ctx, TableSelection next) {
        return apply(ctx, next, "source.tables reloaded");
    }

    /** As {@link #apply(EngineContext, TableSelection)}; {@code why} heads the line it logs. */
    static String apply(EngineContext ctx, TableSelection next, String why) {
        State st = ctx.state.get();
        OnlineSnapshotter online = ctx.online;
        SourceWatch watch = ctx.watch;
        if (st != State.STREAMING || online == null || watch == null) {
            throw new MillraceException(Kind.CONFIG, "the engine is " + st.name().toLowerCase(java.util.Locale.ROOT)
                    + (online == null && st == State.STREAMING ? " from PostgreSQL older than 14, which cannot copy tables online" : "")
                    + ": the table selection can be reloaded only while it streams; try again then, or restart");
        }
        SourceConfig src = ctx.config.source();
        synchronized (ctx.joiner) {
            try (Connection c = ctx.conns.open()) {
                for (TableRef t : next.tables()) {
                    if (!t.isPattern() && Catalog.table(c, t) == null) {
                        throw new MillraceException(Kind.CONFIG, "config: source.tables names " + t + ", which does not exist in the source"
                                + " database (names are case-sensitive); nothing was changed");
                    }
                }
                List<TableRef> published = Catalog.publicationTables(c, src.publication());
                // With source.tables empty the publication is the selection, the user's: Millrace does not take tables out of it.
                boolean managed = io.millrace.source.Publisher.manages(c, src) && !next.tables().isEmpty() && !allTables(c, src.publication());
                List<String> notes = new ArrayList<>();
                ctx.selection = next; // from here on, a table joins only if next selects it
                List<TableRef> removed = remove(ctx, c, next, published, managed, notes);
                List<TableRef> added = new ArrayList<>();
                for (Map.Entry<Integer, TableRef> e : Catalog.userTablesByOid(c).entrySet()) {
                    TableRef t = e.getValue();
                    if ((!watch.captures(e.getKey()) || watch.isLeaving(e.getKey())) && next.selects(t, published.contains(t))
                            && !t.equals(ctx.config.online().signalTable())) {
                        TableJoiner.ask(c, e.getKey(), ctx.config.source().slot()); // joins where the stream reaches this message
                        added.add(t);
                    }
                }
                String done = why + ": " + (added.isEmpty() ? "no table added" : "adding " + added.stream().sorted().toList()
                        + " (each copied online while streaming once it joins; one that cannot, having no key or no replica"
                        + " identity, is listed under not_captured with the fix)") + ", " + (removed.isEmpty() ? "no table removed" : "removed "
                        + removed.stream().sorted().toList() + " (no longer captured; the destinations keep their rows)")
                        + (notes.isEmpty() ? "" : "; " + String.join("; ", notes));
                LOG.info(done);
                return done;
            } catch (SQLException e) {
                throw PgErrors.translate("reloading the table selection", e);
            }
        }
    }

    /** Stops capturing the tables {@code next} leaves out, taking them out of the publication when {@code managed}; returns them. */
    private static List<TableRef> remove(EngineContext ctx, Connection c, TableSelection next, List<TableRef> published, boolean managed,
                                         List<String> notes) {
        SourceConfig src = ctx.config.source();
        List<TableRef> removed = new ArrayList<>();
        for (Map.Entry<Integer, TableRef> e : ctx.watch.captured().entrySet()) {
            TableRef t = e.getValue();
            if (next.selects(t, published.contains(t)) || ctx.watch.isLeaving(e.getKey())) {
                continue;
            }
            String drop = "ALTER PUBLICATION " + Ident.quote(src.publication()) + " DROP TABLE " + t.sql() + ";";
            if (managed && published.contains(t)) {
                try (Statement s = c.createStatement()) {
                    s.execute("SET lock_timeout = '" + TableJoiner.LOCK_TIMEOUT + "'");
                    s.execute(drop); // the stream carries its changes up to here, none after
                } catch (SQLException x) {
                    throw PgErrors.translate("taking " + t + " out of publication '" + src.publication() + "' (removed before it: "
                            + removed + ")", x);
                }
            } else if (published.contains(t)) {
                notes.add("publication '" + src.publication() + "' is not managed by Millrace, so it still publishes " + t
                        + " (its changes no longer reach the destinations; the server still decodes and sends them): to stop that, run " + drop);
            }
            ctx.online.cancel(e.getKey());
            ctx.joiner.forget(e.getKey());
            // It leaves where the stream reaches this message (Streaming#left), not now: the stream may run behind, and the
            // table's changes committed before the reload still reach the destinations, each transaction whole.
            ctx.watch.leaving(e.getKey());
            try {
                TableJoiner.leave(c, e.getKey(), src.slot());
            } catch (SQLException x) {
                throw PgErrors.translate("writing the message that takes " + t + " out of the pipeline", x);
            }
            removed.add(t);
        }
        return removed;
    }

    /**
     * What a reload of the transforms changes: the tables whose rules differ (by oid), those whose row filter differs, and
     * the transforms to use. Made by {@link #planTransforms}, before anything changes.
     */
    record TransformsPlan(io.millrace.engine.transform.Transforms next, Map<Integer, TableRef> changed, Map<Integer, TableRef> refiltered) {
    }

    /**
     * Checks {@code next} against the tables captured now, as a start would (every column a rule names exists, keys are
     * kept, row filters PostgreSQL can apply: RowFilters), and what a reload cannot change: {@code transforms.toast} and
     * {@code toast_cache_mb} (they are set up at start), the mask of a key column (the destinations' keys would change),
     * and a row filter of a publication Millrace does not manage. Writes nothing; null when the transforms are the same.
     */
    static TransformsPlan planTransforms(EngineContext ctx, io.millrace.engine.transform.Transforms next) {
        io.millrace.engine.transform.Transforms now = ctx.transforms;
        if (next.equals(now)) {
            return null;
        }
        if (next.toast() != now.toast() || next.toastCacheMb() != now.toastCacheMb()) {
            throw new MillraceException(Kind.CONFIG, "config: transforms.toast or transforms.toast_cache_mb changed, which needs a restart;"
                    + " nothing was changed");
        }
        SourceWatch watch = ctx.watch;
        if (ctx.state.get() != State.STREAMING || ctx.online == null || watch == null) {
            throw new MillraceException(Kind.CONFIG, "the engine is " + ctx.state.get().name().toLowerCase(java.util.Locale.ROOT)
                    + ": transforms can be reloaded only while it streams (PostgreSQL 14+); try again then, or restart");
        }
        SourceConfig src = ctx.config.source();
        try (Connection c = ctx.conns.open()) {
            List<io.millrace.core.schema.RelationInfo> tables = new ArrayList<>();
            Map<Integer, TableRef> changed = new java.util.LinkedHashMap<>();
            Map<Integer, TableRef> refiltered = new java.util.LinkedHashMap<>();
            for (Map.Entry<Integer, TableRef> e : new java.util.TreeMap<>(watch.captured()).entrySet()) {
                io.millrace.core.schema.RelationInfo r = Catalog.relation(c, e.getValue(), ctx.survey.types());
                if (r == null) {
                    continue; // dropped meanwhile
                }
                tables.add(r);
                String key = io.millrace.engine.transform.Transforms.keyMaskChanged(now, next, r);
                if (key != null) {
                    throw new MillraceException(Kind.CONFIG, "config: transforms would change how key column '" + key + "' of " + r.table()
                            + " is masked (or the salt of its hash): the destinations hold its rows under the keys they have, and a"
                            + " reload cannot re-key them. Keep its mask as it is, or restart with a fresh destination; nothing was changed");
                }
                if (!io.millrace.engine.transform.Transforms.sameRule(now, next, r.table())) {
                    changed.put(e.getKey(), r.table());
                }
                if (!Objects.equals(filter(now, r.table()), filter(next, r.table()))) {
                    refiltered.put(e.getKey(), r.table());
                }
            }
            next.check(tables);
            io.millrace.engine.transform.RowFilters.check(c, next, tables, Catalog.serverVersion(c), src.publication(), false);
            if (!refiltered.isEmpty() && (!io.millrace.source.Publisher.manages(c, src) || ctx.selection.tables().isEmpty() || allTables(c, src.publication()))) {
                StringBuilder sql = new StringBuilder();
                for (TableRef t : refiltered.values()) {
                    String f = filter(next, t);
                    sql.append(" ALTER PUBLICATION ").append(Ident.quote(src.publication())).append(" DROP TABLE ").append(t.sql())
                            .append("; ALTER PUBLICATION ").append(Ident.quote(src.publication())).append(" ADD TABLE ").append(t.sql())
                            .append(f == null ? "" : " WHERE (" + f + ")").append(';');
                }
                throw new MillraceException(Kind.CONFIG, "config: transforms change the row filter of " + refiltered.values()
                        + ", and publication '" + src.publication() + "' is not managed by Millrace (source.create_publication: false,"
                        + " source.tables empty, FOR ALL TABLES, or a publication Millrace did not create), so Millrace does not alter it. Run, as the tables' owner: BEGIN;"
                        + sql + " COMMIT; then reload again; nothing was changed");
            }
            return new TransformsPlan(next, changed, refiltered);
        } catch (SQLException e) {
            throw PgErrors.translate("checking the reloaded transforms", e);
        }
    }

    private static String filter(io.millrace.engine.transform.Transforms t, TableRef table) {
        io.millrace.engine.transform.TableRule r = t.forTable(table);
        return r == null ? null : r.filter();
    }

    /**
     * Makes the transforms of {@code plan} those of the engine: each changed row filter replaces the table's in the
     * publication (one transaction: the stream passes the table's changes under the old filter up to its commit, under
     * the new one after it), every destination takes the new transforms at its next write, and each table whose rules
     * changed is copied again online, reconciling (INV: WATERMARK, COVER): its rows reach the destinations under the new
     * rules, and rows the new filter leaves out are deleted from the destinations whose keys can be compared (postgres,
     * DuckDB; jsonl and Kafka get their deletes from those). Returns what changed.
     */
    static String applyTransforms(EngineContext ctx, TransformsPlan plan) {
        SourceConfig src = ctx.config.source();
        if (!plan.refiltered().isEmpty()) {
            try (Connection c = ctx.conns.open(); Statement s = c.createStatement()) {
                c.setAutoCommit(false);
                s.execute("SET LOCAL lock_timeout = '" + TableJoiner.LOCK_TIMEOUT + "'");
                for (TableRef t : plan.refiltered().values()) {
                    String f = filter(plan.next(), t);
                    s.execute("ALTER PUBLICATION " + Ident.quote(src.publication()) + " DROP TABLE " + t.sql());
                    s.execute("ALTER PUBLICATION " + Ident.quote(src.publication()) + " ADD TABLE " + t.sql() + (f == null ? "" : " WHERE (" + f + ")"));
                }
                c.commit();
            } catch (SQLException e) {
                throw PgErrors.translate("changing the row filters of " + plan.refiltered().values() + " in publication '" + src.publication()
                        + "' (nothing was changed)", e);
            }
        }
        ctx.transforms = plan.next();
        for (io.millrace.core.sink.Sink s : ctx.sinks) {
            io.millrace.engine.transform.Transforms.replace(s, plan.next());
        }
        List<TableRef> copied = new ArrayList<>();
        for (Map.Entry<Integer, TableRef> e : plan.changed().entrySet()) {
            if (ctx.online.submitReconciling(e.getKey())) {
                copied.add(e.getValue());
            }
        }
        String done = "transforms reloaded: " + (copied.isEmpty() ? "no captured table's rules changed"
                : "copying " + copied + " again online under the new rules" + (plan.refiltered().isEmpty() ? ""
                : " (row filters changed for " + plan.refiltered().values() + ": rows they leave out are deleted from the destinations)"));
        LOG.info(done);
        return done;
    }

    static boolean allTables(Connection c, String publication) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT puballtables FROM pg_publication WHERE pubname = ?")) {
            ps.setString(1, publication);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() && rs.getBoolean(1);
            }
        }
    }
}
