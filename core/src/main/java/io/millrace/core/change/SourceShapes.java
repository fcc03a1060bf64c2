package io.millrace.core.change;

import io.millrace.core.schema.ColumnInfo;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.SchemaChange;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * The shape each source table a destination holds was last written in, by oid: a fingerprint of its columns' names, type
 * oids and modifiers in order (not the key flags, which the catalog and the stream give differently for REPLICA IDENTITY
 * FULL), recorded in the destination's checkpoint with the data ({@link Checkpoint#shapes}).
 *
 * <p>Why: pgoutput describes a table at its first change of a session, in its shape then. A table reshaped while
 * Millrace was stopped — a column added with a default, a column retyped with a USING expression, both of which rewrite
 * the existing rows without change events — shows the new shape in the first Relation message after the restart, and
 * the stream alone never shows that it changed. The engine compares that message with the fingerprint here; a
 * difference means the destinations' copies were written in another shape, and the table is copied again online.
 *
 * <p>Pure: a fingerprint is 16 hex digits (64-bit FNV-1a), so a checkpoint grows by about 30 bytes per table.
 */
public final class SourceShapes {
    private static final long FNV_OFFSET = 0xcbf29ce484222325L;
    private static final long FNV_PRIME = 0x100000001b3L;

    private SourceShapes() {
    }

    /** The fingerprint of {@code rel}'s columns: names, type oids and modifiers, in order. */
    public static String fingerprint(RelationInfo rel) {
        long h = FNV_OFFSET;
        for (ColumnInfo c : rel.columns()) {
            for (byte b : c.name().getBytes(StandardCharsets.UTF_8)) {
                h = (h ^ (b & 0xff)) * FNV_PRIME;
            }
            h = mix(mix(mix(h, 0), c.type() == null ? 0 : c.type().oid()), c.typeMod());
        }
        return String.format("%016x", h);
    }

    /** What a withheld table's entry starts with ({@link #withheld}); never a fingerprint, which is 16 hex digits. */
    private static final String WITHHELD = "withheld:";
    /** What the entry of a table withheld until a reconcile message starts with ({@link #withheldUntilReconciled}). */
    private static final String WITHHELD_UNTIL_RECONCILED = "withheld-until-reconciled:";

    /**
     * The entry of a table whose changes are withheld from the destinations (INV: RESUME): its stream shows fewer
     * columns than it has — a publication's column list leaves some out — so its changes are not applied, and when the
     * stream shows it whole again it is copied again, reconciling. {@code whole}: its columns before, by name; the entry
     * keeps them (a JSON array after {@value #WITHHELD}) so that a restart knows the hold and when it ends. A release
     * that does not know the entry reads it as a shape it never wrote, and copies the table again: also right.
     */
    public static String withheld(List<String> whole) {
        return entry(WITHHELD, whole);
    }

    /**
     * As {@link #withheld}, for a hold that only a reconcile message ends, not the stream showing the table whole: the
     * publication stopped publishing some kinds of change, which no Relation message shows.
     */
    public static String withheldUntilReconciled(List<String> whole) {
        return entry(WITHHELD_UNTIL_RECONCILED, whole);
    }

    /** Whether {@code entry} is a {@link #withheldUntilReconciled} entry. */
    public static boolean untilReconciled(String entry) {
        return entry != null && entry.startsWith(WITHHELD_UNTIL_RECONCILED);
    }

    private static String entry(String prefix, List<String> whole) {
        try {
            return prefix + JSON.writeValueAsString(whole);
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The columns of a {@link #withheld} (or {@link #withheldUntilReconciled}) entry, or null for a fingerprint (or null). */
    public static List<String> withheldColumns(String entry) {
        String prefix = entry == null ? null : entry.startsWith(WITHHELD) ? WITHHELD
                : entry.startsWith(WITHHELD_UNTIL_RECONCILED) ? WITHHELD_UNTIL_RECONCILED : null;
        if (prefix == null) {
            return null;
        }
        try {
            return List.of(JSON.readValue(entry.substring(prefix.length()), String[].class));
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalArgumentException("a checkpoint's shape entry '" + entry + "' is not a withheld table's columns", e);
        }
    }

    /** What a table's entry starts with while a DDL of it waits for its next Relation message ({@link #pendingDdl}). */
    private static final String PENDING_DDL = "ddl-pending:";

    /**
     * The entry of a table the event trigger reported a DDL of, which the stream has not described since (pgoutput
     * describes a table at its next change): {@code written}, the shape its copy was last written in (a fingerprint, or
     * empty), then the trigger's account of the DDL. INV: RESUME — a restart past the DDL's message, before the table's
     * next change, no longer reads the message; without the account its first Relation message showed a rename as a column
     * dropped and another added (a user's keyless table lost the renamed column's values in every destination). Replaced by
     * the fingerprint with the table's next change ({@link #follow}). A release that does not know the entry reads it as a
     * shape it never wrote and copies the table again.
     */
    public static String pendingDdl(String written, SchemaChange ddl) {
        return PENDING_DDL + (written == null ? "" : written) + ":" + new String(ddl.toJson(), StandardCharsets.UTF_8);
    }

    /** Whether {@code entry} is a {@link #pendingDdl} entry. */
    public static boolean isPendingDdl(String entry) {
        return entry != null && entry.startsWith(PENDING_DDL);
    }

    /** The {@link #pendingDdl} entry {@code entry} with {@code written} as the shape written: its account as it is, not read again. */
    public static String withWritten(String entry, String written) {
        return PENDING_DDL + (written == null ? "" : written) + entry.substring(entry.indexOf(':', PENDING_DDL.length()));
    }

    /** The trigger's account in a {@link #pendingDdl} entry, or null for any other entry (or null). */
    public static SchemaChange pendingChange(String entry) {
        if (!isPendingDdl(entry)) {
            return null;
        }
        int colon = entry.indexOf(':', PENDING_DDL.length());
        return SchemaChange.parse(entry.substring(colon + 1).getBytes(StandardCharsets.UTF_8));
    }

    /**
     * The shape an entry says the table's copy was written in: the fingerprint itself, or the one a {@link #pendingDdl}
     * entry keeps (empty when none); a withheld table's entry as it is.
     */
    public static String written(String entry) {
        if (!isPendingDdl(entry)) {
            return entry;
        }
        return entry.substring(PENDING_DDL.length(), entry.indexOf(':', PENDING_DDL.length()));
    }

    private static final com.fasterxml.jackson.databind.ObjectMapper JSON = new com.fasterxml.jackson.databind.ObjectMapper();

    private static long mix(long h, int v) {
        for (int i = 0; i < 4; i++) {
            h = (h ^ ((v >>> (8 * i)) & 0xff)) * FNV_PRIME;
        }
        return h;
    }

    /**
     * {@code before} (a checkpoint's shapes) after {@code events}: each table with an event takes the fingerprint of the
     * shape its last event was written in; a dropped table is gone. {@code before} itself when nothing changed.
     */
    public static SortedMap<Integer, String> follow(SortedMap<Integer, String> before, List<ChangeEvent> events) {
        TreeMap<Integer, String> after = null;
        RelationInfo last = null;
        // each relation's fingerprint made once a batch: the changes of a transaction often go from table to table
        java.util.Map<RelationInfo, String> made = new java.util.IdentityHashMap<>();
        for (ChangeEvent e : events) {
            RelationInfo rel = e.relation();
            if (rel == last) {
                continue; // the common case: a run of changes of one relation
            }
            last = rel;
            SortedMap<Integer, String> now = after == null ? before : after;
            boolean dropped = rel.ddl() != null && rel.ddl().dropped();
            String fp = dropped ? null : made.computeIfAbsent(rel, SourceShapes::fingerprint);
            if (java.util.Objects.equals(now.get(rel.oid()), fp)) {
                continue;
            }
            if (after == null) {
                after = new TreeMap<>(before);
            }
            if (dropped) {
                after.remove(rel.oid());
            } else {
                after.put(rel.oid(), fp);
            }
        }
        if (after != null) {
            for (java.util.Map.Entry<Integer, String> e : before.entrySet()) {
                if (withheldColumns(e.getValue()) != null && after.containsKey(e.getKey())) {
                    after.put(e.getKey(), e.getValue()); // a hold stands over the rows of a copy under way: ended by its own entry only
                }
            }
        }
        return after == null ? before : after;
    }
}
