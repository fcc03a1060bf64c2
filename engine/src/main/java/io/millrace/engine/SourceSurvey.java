package io.millrace.engine;

import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;
import io.millrace.snapshot.SnapshotRunner;
import io.millrace.source.Catalog;
import io.millrace.source.CatalogTypeResolver;
import io.millrace.source.PgErrors;
import io.millrace.source.Preflight;
import io.millrace.source.SourceConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;

/**
 * The first stage of a start: the preflight checks, the captured tables' shapes, the signal table, and whether values
 * are read as binary. Reads the source only; a table renamed or dropped meanwhile is looked up again (three times).
 */
final class SourceSurvey {
    private static final Logger LOG = LoggerFactory.getLogger(Engine.class); // the engine's log: one category for a run's stages
    private static final int ATTEMPTS = 3;

    /**
     * What the start reads of the source before it opens the destinations.
     *
     * @param textReason why the stream's values are text, not binary ({@code null} when they are binary): said in the
     *                   status and the metrics, not only in the log
     * @param readAt     the server's WAL position read after the tables' shapes: a transaction that commits at or after it
     *                   was not in them (the stream's first look at a table is compared with them from there)
     */
    record Survey(Preflight.Report report, List<SnapshotRunner.Table> tables, CatalogTypeResolver types, String textReason,
                  io.millrace.core.Lsn readAt) {
        boolean binary() {
            return textReason == null;
        }

        RelationInfo relation(TableRef t) {
            return tables.stream().map(SnapshotRunner.Table::relation).filter(r -> r.table().equals(t)).findFirst().orElseThrow();
        }

        List<RelationInfo> relations() {
            return tables.stream().map(SnapshotRunner.Table::relation).toList();
        }
    }

    private final EngineContext ctx;
    private final SourceConfig src;

    SourceSurvey(EngineContext ctx) {
        this.ctx = ctx;
        this.src = ctx.config.source();
    }

    /** Surveys the source and sets {@link EngineContext#watch}. */
    Survey run() {
        CatalogTypeResolver types = new CatalogTypeResolver(ctx.conns::open);
        try (Connection meta = ctx.conns.open()) {
            for (int attempt = 1; ; attempt++) {
                Preflight.Report report = preflight(meta, attempt);
                if (report == null) {
                    continue;
                }
                types.load(meta);
                checkSignalTable(meta);
                List<SnapshotRunner.Table> tables = new ArrayList<>();
                TableRef gone = readTables(meta, report.tables(), types, tables);
                if (gone == null) {
                    watch(meta, tables);
                    ctx.survey = new Survey(report, List.copyOf(tables), types, textReason(report.serverVersion(), tables),
                            Catalog.walInserted(meta));
                    return ctx.survey;
                }
                if (attempt == ATTEMPTS) {
                    throw new MillraceException(Kind.CONFIG, "table " + gone.sql() + " does not exist in the source database");
                }
                LOG.info("table {} was renamed or dropped while Millrace started: checking the source again", gone);
            }
        } catch (SQLException e) {
            throw PgErrors.translate("reading the source catalog", e);
        }
    }

    /**
     * The same survey with the tables' shapes read again (and {@link EngineContext#watch} rebuilt on them): for a snapshot
     * started again because a table changed under it, which must copy the table in its new shape.
     */
    Survey rereadTables(Survey old) {
        try (Connection meta = ctx.conns.open()) {
            List<SnapshotRunner.Table> tables = new ArrayList<>();
            TableRef gone = readTables(meta, old.report().tables(), old.types(), tables);
            if (gone != null) {
                throw new MillraceException(Kind.CONFIG, "table " + gone.sql() + " was dropped or renamed while the initial snapshot"
                        + " started; start again");
            }
            watch(meta, tables);
            ctx.survey = new Survey(old.report(), List.copyOf(tables), old.types(),
                    old.binary() ? textReason(old.report().serverVersion(), tables) : old.textReason(), Catalog.walInserted(meta));
            return ctx.survey;
        } catch (SQLException e) {
            throw PgErrors.translate("reading the source catalog", e);
        }
    }

    /** Sets {@link EngineContext#watch} on {@code tables}, with their columns as the catalog numbers them. */
    private void watch(Connection meta, List<SnapshotRunner.Table> tables) throws SQLException {
        SourceWatch w = new SourceWatch(src, () -> ctx.selection, tables.stream().map(SnapshotRunner.Table::relation).toList());
        w.connections(ctx.conns::open);
        w.loadColumns(meta);
        ctx.watch = w;
        ctx.joiner.partitionsAtStart(meta, w); // one attached from now on holds rows the stream does not carry
    }

    /** The preflight's report, its warnings logged; null to look again (a table a pattern listed is gone); throws on a failure. */
    private Preflight.Report preflight(Connection meta, int attempt) {
        Preflight.Report report = Preflight.run(ctx.conns, meta);
        for (Preflight.Check c : report.checks()) {
            if (c.status() == Preflight.Status.WARN && c.name().equals(Preflight.DDL_TRIGGER)) {
                LOG.info("preflight: {} — {} (fix: {})", c.name(), c.detail(), c.fix()); // optional: not a warning at every start
            } else if (c.status() == Preflight.Status.WARN) {
                LOG.warn("preflight: {} — {}{}", c.name(), c.detail(), c.fix() == null ? "" : " (fix: " + c.fix() + ")");
            }
        }
        if (attempt < ATTEMPTS && !report.ok() && report.failures().stream().allMatch(f -> f.kind() == Kind.CONFIG
                && f.name().startsWith("table ") && src.tables().stream().noneMatch(x -> f.name().equals("table " + x)))) {
            LOG.info("a table source.tables matches was renamed or dropped while Millrace started: checking the source again");
            return null; // listed by a pattern, gone a moment later
        }
        report.throwIfFailed();
        return report;
    }

    private void checkSignalTable(Connection meta) throws SQLException {
        TableRef signalTable = ctx.config.online().signalTable();
        if (signalTable == null) {
            return;
        }
        Catalog.TableInfo info = Catalog.table(meta, signalTable);
        if (info == null) {
            throw new MillraceException(Kind.CONFIG, "config: snapshot.signal_table names " + signalTable + ", which does not exist."
                    + " Create it: CREATE TABLE " + signalTable.sql() + " (id text PRIMARY KEY, type text NOT NULL, data text);"
                    + " or remove snapshot.signal_table");
        }
        Preflight.Check identity = Preflight.replicaIdentity(meta, info, src.publication(), List.of());
        if (identity != null) { // it joins the publication: never at the cost of the source's writes
            throw new MillraceException(identity.kind(), "snapshot.signal_table: " + identity.detail() + ". Fix: " + identity.fix());
        }
    }

    /** Reads the shape of each of {@code names} into {@code out}; returns one that no longer exists (DDL meanwhile), or null. */
    private static TableRef readTables(Connection meta, List<TableRef> names, CatalogTypeResolver types, List<SnapshotRunner.Table> out)
            throws SQLException {
        for (TableRef t : names) {
            Catalog.TableInfo info = Catalog.table(meta, t);
            if (info == null) {
                return t;
            }
            try {
                out.add(new SnapshotRunner.Table(Catalog.relation(meta, t, types), info.partitioned(), info.estimatedRows()));
            } catch (MillraceException e) {
                if (e.kind() != Kind.CONFIG) {
                    throw e;
                }
                return t; // gone between the two look-ups
            }
        }
        return null;
    }

    /** Why values are read as text ({@code null}: binary), or the refusal when {@code source.binary} is on and cannot be. */
    private String textReason(int serverVersion, List<SnapshotRunner.Table> tables) {
        boolean supported = serverVersion >= 140000;
        String unsupportedColumn = null;
        for (SnapshotRunner.Table t : tables) {
            RelationInfo r = t.relation();
            for (int i = 0; i < r.columnCount() && unsupportedColumn == null; i++) {
                if (!r.codec(i).supportsBinary()) {
                    unsupportedColumn = r.table() + "." + r.column(i).name() + " (" + r.codec(i).typeName() + ")";
                }
            }
        }
        return switch (src.binary()) {
            case OFF -> "source.binary is off";
            case AUTO -> !supported ? "PostgreSQL " + serverVersion / 10000 + " sends values only as text (binary needs 14 or newer)"
                    : unsupportedColumn != null ? "column " + unsupportedColumn + " has a type Millrace reads only as text" : null;
            case ON -> {
                if (!supported) {
                    throw new MillraceException(Kind.CONFIG, "config: source.binary is on, but binary values need PostgreSQL 14 or newer;"
                            + " set source.binary: auto");
                }
                if (unsupportedColumn != null) {
                    throw new MillraceException(Kind.CONFIG, "config: source.binary is on, but column " + unsupportedColumn
                            + " has a type Millrace reads only as text; set source.binary: auto");
                }
                yield null;
            }
        };
    }
}
