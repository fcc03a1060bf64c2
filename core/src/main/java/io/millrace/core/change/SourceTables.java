package io.millrace.core.change;

import io.millrace.core.MillraceException;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * Which source table a destination holds under which name, followed by the table's oid.
 *
 * <p>PostgreSQL keeps a table's oid through {@code ALTER TABLE … RENAME TO} and {@code SET SCHEMA}, and pgoutput's
 * Relation message carries the oid with the current name, before the table's next change. So a streamed change whose
 * relation has a known oid under another name is a rename: the destination follows it (renames its table) before it
 * applies the change, and never creates a new empty table beside the old one. Rows read by a snapshot carry the name
 * the table had when its copy began, which may be older than what the stream showed since: they go to the name held.
 *
 * <p>A name is held by one oid at a time. When a table takes a name another oid holds — a table created under the name
 * of one dropped (or renamed) in the source — the other oid's copy is renamed aside, to {@link #aside
 * name__oid}, so the new table's rows are never mixed with the old ones; if that oid shows again under a new name (it
 * had been renamed), its copy follows from there.
 *
 * <p>Pure and deterministic: the pipeline records {@link Followed#held()} in each destination's checkpoint, and the
 * destinations that rename tables (postgres, DuckDB) compute the same renames from their last checkpoint.
 */
public final class SourceTables {
    /** PostgreSQL's limit on identifiers, in bytes (NAMEDATALEN - 1). */
    private static final int MAX_NAME_BYTES = 63;

    /**
     * The destination's table of source table {@code oid} is to be renamed from {@code from} to {@code to} (source names;
     * a destination maps them to its own tables). {@code aside}: another table took the name {@code from}.
     */
    public record Rename(int oid, TableRef from, TableRef to, boolean aside) {
        private String source() {
            return "source table " + from + " (oid " + Integer.toUnsignedString(oid) + ")";
        }

        /** The destination already has a table of the new name, which Millrace holds for no source table. */
        public MillraceException occupied(String destination, TableRef target) {
            return new MillraceException(MillraceException.Kind.SINK, "destination '" + destination + "': cannot follow " + source()
                    + " renamed to " + to + ": table " + target + " exists here already, and it is not the copy of a table Millrace"
                    + " captures. Fix: drop it, or rename it (ALTER TABLE " + target.sql() + " RENAME TO ...), then start again");
        }

        /** The destination failed to rename its table. */
        public MillraceException failed(String destination, String error, Throwable cause) {
            return new MillraceException(MillraceException.Kind.SINK, "destination '" + destination + "': could not follow " + source()
                    + " renamed to " + to + ": " + error + ". Fix: rename the destination's table to " + to + " by hand, then start again",
                    cause);
        }

        /** For the log, once the destination renamed {@code target} to {@code renamed}. */
        public String done(String destination, TableRef target, TableRef renamed) {
            return aside ? "destination '" + destination + "': a new source table took the name " + from + ": the copy of the table"
                    + " that had it (oid " + Integer.toUnsignedString(oid) + ", dropped or renamed in the source) is kept as " + renamed
                    : "destination '" + destination + "': renamed table " + target + " to " + renamed + " (" + source() + " renamed to "
                    + to + ")";
        }

        /** For the log, when the destination has no table to rename. */
        public String nothing(String destination, TableRef target) {
            return "destination '" + destination + "': " + source() + " is now " + to + "; no table " + target + " here to rename";
        }
    }

    /**
     * @param held    the tables held after the batch, by oid
     * @param renames the renames to carry out, in this order, before any change of the batch is applied
     */
    public record Followed(SortedMap<Integer, TableRef> held, List<Rename> renames) {
        /** The name the destination holds {@code relation}'s table under once the renames are done. */
        public TableRef name(RelationInfo relation) {
            TableRef t = held.get(relation.oid());
            return t == null ? relation.table() : t;
        }
    }

    private SourceTables() {
    }

    /** Follows {@code events} (in stream order) from the tables held before them. */
    public static Followed follow(SortedMap<Integer, TableRef> before, List<ChangeEvent> events) {
        TreeMap<Integer, TableRef> held = null;
        List<Rename> renames = new ArrayList<>();
        RelationInfo last = null;
        boolean lastSnapshot = false;
        for (ChangeEvent e : events) {
            RelationInfo rel = e.relation();
            if (rel == last && e.snapshot() == lastSnapshot) {
                continue; // the common case: a run of changes of one relation
            }
            last = rel;
            lastSnapshot = e.snapshot();
            SortedMap<Integer, TableRef> now = held == null ? before : held;
            TableRef known = now.get(rel.oid());
            if (known != null && (known.equals(rel.table()) || e.snapshot())) {
                continue;
            }
            if (held == null) {
                held = new TreeMap<>(before);
            }
            Integer holder = holderOf(held, rel.table());
            if (holder != null) {
                TableRef aside = aside(rel.table(), holder);
                renames.add(new Rename(holder, rel.table(), aside, true));
                held.put(holder, aside);
            }
            if (known != null) {
                renames.add(new Rename(rel.oid(), known, rel.table(), false));
            }
            held.put(rel.oid(), rel.table());
        }
        return new Followed(held == null ? before : java.util.Collections.unmodifiableSortedMap(held), List.copyOf(renames));
    }

    private static Integer holderOf(SortedMap<Integer, TableRef> held, TableRef name) {
        for (var e : held.entrySet()) {
            if (e.getValue().equals(name)) {
                return e.getKey();
            }
        }
        return null;
    }

    /**
     * Where the copy of source table {@code oid} goes when another table takes its name {@code t}: {@code t__oid} in the
     * same schema, the name cut so that it fits PostgreSQL's 63 bytes.
     */
    public static TableRef aside(TableRef t, int oid) {
        String suffix = "__" + Integer.toUnsignedString(oid);
        String base = t.table();
        while (base.getBytes(StandardCharsets.UTF_8).length + suffix.length() > MAX_NAME_BYTES) {
            base = base.substring(0, base.offsetByCodePoints(base.length(), -1));
        }
        return new TableRef(t.schema(), base + suffix);
    }
}
