package io.millrace.engine;

import io.millrace.core.schema.Ident;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.ShapeChange;
import io.millrace.core.schema.TableRef;
import io.millrace.source.Catalog;
import io.millrace.source.SourceConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Watches the source catalog for the DDL that pgoutput does not announce, and says what the destinations do about it.
 *
 * <ul>
 *   <li>A captured table dropped: pgoutput sends nothing. Logged once (on the slot monitor's tick): the destinations keep
 *       their copy as it was; a table created later under that name gets a copy of its own and the old one is kept aside
 *       ({@link io.millrace.core.change.SourceTables}).</li>
 *   <li>A table created that {@code source.tables} matches: {@link TableJoiner} lets it join while streaming.</li>
 *   <li>A captured table renamed: it keeps its oid, so it stays captured while {@code source.tables} selects its new name;
 *       the destinations follow at its next change. Renamed to a name the selection does not take, it is no longer
 *       captured ({@link #takeRenamedOut}). Logged once, by whichever sees it first: the tick, or the stream's Relation
 *       message.</li>
 *   <li>At start: tables the destinations hold that were dropped or renamed while Millrace was stopped.</li>
 *   <li>Columns: {@link ShapeChange} reads renames from Relation messages, which carry no attribute numbers; {@link #misread}
 *       checks that reading against the catalog's attribute numbers.</li>
 * </ul>
 *
 * <p>Threads: {@link #tick} runs on the slot monitor's thread, {@link #renamed} and {@link #misread} on the assembler's;
 * the maps are concurrent. Nothing here writes to the source, and a failed look-up never stops the pipeline.
 */
final class SourceWatch {
    private static final Logger LOG = LoggerFactory.getLogger(SourceWatch.class);

    private final SourceConfig config;
    private final java.util.function.Supplier<TableSelection> selection;
    /** Captured tables by oid, under their current name as far as known. */
    private final Map<Integer, TableRef> captured = new ConcurrentHashMap<>();
    /** Attribute numbers of each captured table's live columns by name, as last read. */
    private final Map<Integer, Map<String, Integer>> attnums = new ConcurrentHashMap<>();

    SourceWatch(SourceConfig config, java.util.function.Supplier<TableSelection> selection, Collection<RelationInfo> tables) {
        this.config = config;
        this.selection = selection;
        tables.forEach(r -> captured.put(r.oid(), r.table()));
    }

    /** Whether the table of {@code oid} is captured. Any thread. */
    boolean captures(int oid) {
        return captured.containsKey(oid);
    }

    /** The table of {@code oid}, now {@code name}, joined while streaming ({@link TableJoiner}). */
    void capture(int oid, TableRef name) {
        captured.put(oid, name);
        try (Connection c = conns.get()) {
            attnums.putAll(Catalog.attributeNumbers(c, List.of(oid)));
        } catch (SQLException | RuntimeException e) {
            LOG.debug("could not read the columns of {}: {}", name, e.toString()); // read again at its next shape change
        }
    }

    /** The attribute numbers of the table's live columns by name as last read, or null. Any thread. */
    Map<String, Integer> attributeNumbers(int oid) {
        return attnums.get(oid);
    }

    /** The captured tables, by oid (a copy). */
    Map<Integer, TableRef> captured() {
        return Map.copyOf(captured);
    }

    /** The table of {@code oid} is no longer captured (a reload left it out, and the stream reached that: {@link #leaving}). */
    void release(int oid) {
        captured.remove(oid);
        attnums.remove(oid);
        leaving.remove(oid);
    }

    /**
     * Captured tables a reload left out, until the stream reaches the reload's leave message ({@link #release}): still
     * captured, so that their changes committed before the reload reach the destinations; a reload does not leave them
     * out again, and one that takes them back asks them to join again (the join follows the leave in the stream).
     */
    private final java.util.Set<Integer> leaving = ConcurrentHashMap.newKeySet();

    /** See {@link #leaving}. Any thread. */
    void leaving(int oid) {
        leaving.add(oid);
    }

    /** See {@link #leaving}. Any thread. */
    boolean isLeaving(int oid) {
        return leaving.contains(oid);
    }

    /** Where {@link #capture} reads the columns; set by the engine. */
    private volatile ConnectionSource conns = () -> {
        throw new SQLException("no connection");
    };

    interface ConnectionSource {
        Connection get() throws SQLException;
    }

    void connections(ConnectionSource c) {
        this.conns = c;
    }

    /** Reads the attribute numbers of the captured tables; at start, before streaming. */
    void loadColumns(Connection c) throws SQLException {
        attnums.putAll(Catalog.attributeNumbers(c, captured.keySet()));
    }

    /**
     * At start: the tables the destinations hold ({@code held}, from their checkpoints) that were dropped or renamed in the
     * source since they last saw them.
     */
    void atStart(Connection c, Collection<? extends Map<Integer, TableRef>> held) throws SQLException {
        Map<Integer, TableRef> all = new TreeMap<>();
        held.forEach(all::putAll);
        Map<Integer, TableRef> now = Catalog.tablesByOid(c, all.keySet());
        for (Map.Entry<Integer, TableRef> e : all.entrySet()) {
            TableRef t = now.get(e.getKey());
            if (t == null) {
                // named as the destinations hold it: a table dropped after another of its name was created is held under its aside
                // name (shop.t__16527), which the source never had
                LOG.info("the destinations' table {}: its source table (oid {}) was dropped; a destination that keeps dropped tables"
                        + " (drop_tables: false, the default) keeps it", e.getValue(), Integer.toUnsignedString(e.getKey()));
            } else if (!t.equals(e.getValue())) {
                LOG.info("table {} (oid {}) is now {} in the source: the destinations follow at its next change (tables are renamed,"
                        + " events carry the new name)", e.getValue(), Integer.toUnsignedString(e.getKey()), t);
            }
        }
    }

    /** One look at the catalog (slot monitor thread): captured tables dropped or renamed. */
    void tick(Connection c) throws SQLException {
        Map<Integer, TableRef> now = Catalog.tablesByOid(c, captured.keySet());
        for (Map.Entry<Integer, TableRef> e : captured.entrySet()) {
            int oid = e.getKey();
            TableRef t = now.get(oid);
            if (t == null) {
                if (captured.remove(oid) != null) {
                    attnums.remove(oid);
                    LOG.warn("table {} (oid {}) was dropped in the source. With the DDL event trigger, jsonl and Kafka got a DROP event"
                            + " and a truncate, and a destination with drop_tables: true dropped its copy, in order with the data; otherwise"
                            + " (pgoutput sends nothing for a drop) the destinations keep their copy as it was: drop it there when it is no"
                            + " longer needed. A table created later under that name gets a copy of its own; an old copy is then kept as {}",
                            e.getValue(),
                            Integer.toUnsignedString(oid), io.millrace.core.change.SourceTables.aside(e.getValue(), oid));
                }
            } else {
                rename(oid, e.getValue(), t);
            }
        }
    }

    /** A Relation message showed {@code after} (assembler thread): a table renamed since {@code before} is logged. */
    void renamed(RelationInfo before, RelationInfo after) {
        if (!before.table().equals(after.table())) {
            captured.putIfAbsent(after.oid(), before.table());
            rename(after.oid(), before.table(), after.table());
        }
    }

    private void rename(int oid, TableRef from, TableRef to) {
        if (!from.equals(to) && captured.replace(oid, from, to)) {
            if (matched(to)) {
                LOG.info("table {} (oid {}) was renamed to {} in the source: it stays captured, and the destinations follow at its next"
                        + " change (tables are renamed, events carry the new name)", from, Integer.toUnsignedString(oid), to);
                return;
            }
            // named by the name it had, or by the name it had before an earlier rename of this run (renamed twice: before, the
            // second was logged as taking it out, while it stayed captured, as the first one said; found by a user)
            TableRef named = selection.get().tables().stream().anyMatch(t -> !t.isPattern() && t.equals(from)) ? from
                    : namedRenamed.entrySet().stream().filter(e -> e.getValue().equals(from)).map(Map.Entry::getKey).findFirst().orElse(null);
            if (named != null) {
                namedRenamed.put(named, to);
                LOG.warn("table {} (oid {}) was renamed to {} in the source: source.tables names it by its old name{}, so it stays"
                        + " captured until the next start, which stops with the fix (write the new name in source.tables)", from,
                        Integer.toUnsignedString(oid), to, named.equals(from) ? "" : " " + named);
                return;
            }
            // Selected by name, as at a start and a reload: before, it stayed captured while streaming (the publication holds
            // it by oid) and the next start took it out of the publication, so its changes stopped reaching the destinations
            // silently, at a restart (found by a DBA who moved a table to another schema).
            renamedOut = true;
            LOG.warn("table {} (oid {}) was renamed to {} in the source, which source.tables does not select: it is no longer"
                    + " captured (taken out of the publication at the next look, as a reload does), and the destinations keep its rows"
                    + " as they are then. To go on capturing it, add {} to source.tables: it is then copied again online, and the"
                    + " copy reconciles the destinations' rows", from, Integer.toUnsignedString(oid), to, to);
        }
    }

    /** Set when a captured table was renamed out of the selection; see {@link #takeRenamedOut()}. */
    private volatile boolean renamedOut;

    /**
     * Tables {@code source.tables} names that were renamed in the source while this run streamed, old name to new: the
     * supervisor's next attempt after a transient failure captures them under the new name ({@link Supervisor}); a
     * restart of the process stops with the fix. Before, the retry after a brief outage was a start like any other, and
     * stopped the pipeline (found by a user: a table renamed, then the source restarted).
     */
    private final java.util.Map<TableRef, TableRef> namedRenamed = new java.util.concurrent.ConcurrentHashMap<>();

    /** See {@link #namedRenamed}. */
    java.util.Map<TableRef, TableRef> namedRenamed() {
        return java.util.Map.copyOf(namedRenamed);
    }

    /**
     * Whether a captured table was renamed to a name the selection does not take since the last call: the caller (the
     * slot monitor's thread) then applies the selection again ({@code Reloader.apply}), which stops capturing it.
     */
    boolean takeRenamedOut() {
        boolean r = renamedOut;
        renamedOut = false;
        return r;
    }

    /** {@link #takeRenamedOut} said true, and applying the selection failed: it says so again at the next look. */
    void renamedOutAgain() {
        renamedOut = true;
    }

    /**
     * Whether {@link ShapeChange}'s reading of a change between {@code before} and {@code after} may be wrong: a column
     * read as renamed that the catalog's attribute numbers show dropped and another added, or the other way round
     * (assembler thread). Unknown numbers count as wrong: the caller then copies the table again, which is always right.
     */
    boolean misread(Connection c, RelationInfo before, RelationInfo after, ShapeChange change) throws SQLException {
        Map<String, Integer> old = attnums.get(after.oid());
        Map<String, Integer> now = Catalog.attributeNumbers(c, List.of(after.oid())).getOrDefault(after.oid(), Map.of());
        attnums.put(after.oid(), now);
        if (change.exact()) {
            return false; // read by attribute numbers from the event trigger's messages
        }
        if (change.renamed().isEmpty() && (change.added().isEmpty() || change.dropped().isEmpty())) {
            return false; // nothing to tell apart: only added, only dropped, or only retyped columns
        }
        if (old == null) {
            return true;
        }
        for (Map.Entry<String, String> r : change.renamed().entrySet()) {
            Integer was = old.get(r.getKey());
            if (was == null || !was.equals(now.get(r.getValue()))) {
                return true;
            }
        }
        for (io.millrace.core.schema.ColumnInfo a : change.added()) {
            Integer n = now.get(a.name());
            if (n == null || old.containsValue(n)) {
                return true; // an added column with an old column's number is that column renamed
            }
        }
        return false;
    }

    private boolean matched(TableRef t) {
        TableSelection sel = selection.get();
        return sel.tables().isEmpty() || sel.selects(t, true);
    }
}
