package io.millrace.core.change;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.millrace.core.Lsn;
import io.millrace.core.Position;
import io.millrace.core.schema.TableRef;

import java.util.ArrayList;
import java.util.List;

/** Reads and writes a {@link Checkpoint} as a small JSON document, strictly (unknown versions fail). */
public final class CheckpointJson {
    private static final ObjectMapper MAPPER = new ObjectMapper()
            .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES);

    private CheckpointJson() {
    }

    public static String write(Checkpoint c) {
        ObjectNode root = MAPPER.createObjectNode();
        root.put("version", c.version());
        ObjectNode id = root.putObject("identity");
        id.put("system_id", c.identity().systemId());
        id.put("database", c.identity().database());
        id.put("slot", c.identity().slot());
        id.put("publication", c.identity().publication());
        id.put("destination", c.identity().destination());
        root.put("flush_lsn", c.flushLsn().toString());
        root.put("applied_commit_lsn", c.applied().commitLsn().toString());
        root.put("applied_ordinal", c.applied().ordinal());
        ObjectNode snap = root.putObject("snapshot");
        snap.put("state", c.snapshot().state().name());
        snap.put("consistent_point", c.snapshot().consistentPoint().toString());
        ArrayNode done = snap.putArray("tables_done");
        c.snapshot().tablesDone().forEach(t -> done.add(t.text()));
        ArrayNode chunks = snap.putArray("chunks_done");
        c.snapshot().chunksDone().forEach(ch -> chunks.add(ch.text()));
        if (!c.online().isEmpty()) {
            ArrayNode online = root.putArray("online");
            for (OnlineTask t : c.online()) {
                ObjectNode task = online.addObject();
                task.put("table", t.table().text()); // read back as it is: a name may hold a dot or a quote
                task.put("kind", t.kind().name().toLowerCase(java.util.Locale.ROOT));
                if (t.filter() != null) {
                    task.put("filter", t.filter());
                }
                task.put("rows_done", t.rowsDone());
                if (t.oid() != 0) {
                    task.put("oid", Integer.toUnsignedLong(t.oid()));
                }
                if (t.key() != null) {
                    ArrayNode key = task.putArray("key");
                    t.key().forEach(key::add);
                }
                ArrayNode ranges = task.putArray("remaining");
                for (OnlineTask.KeyRange r : t.remaining()) {
                    ObjectNode range = ranges.addObject();
                    key(range, "lo", r.lo());
                    key(range, "hi", r.hi());
                }
            }
        }
        if (c.slotLost() != null) {
            Checkpoint.SlotLost l = c.slotLost();
            ObjectNode lost = root.putObject("slot_lost");
            lost.put("state", l.state().name());
            lost.put("lost_at", l.lostAt().toString());
            lost.put("new_slot_at", l.newSlotAt().toString());
            lost.put("reason", l.reason());
            lost.put("count", l.count());
        }
        if (!c.tables().isEmpty()) {
            ArrayNode tables = root.putArray("tables");
            c.tables().forEach((oid, t) -> tables.addObject().put("oid", Integer.toUnsignedLong(oid)).put("schema", t.schema())
                    .put("table", t.table()));
        }
        if (!c.shapes().isEmpty()) {
            ObjectNode shapes = root.putObject("shapes"); // a release before it ignores it: read field by field
            c.shapes().forEach((oid, fp) -> shapes.put(Long.toString(Integer.toUnsignedLong(oid)), fp));
        }
        if (!c.rules().isEmpty()) {
            ObjectNode rules = root.putObject("rules"); // a release before it ignores it, and one after reads its absence as unknown
            c.rules().forEach((oid, fp) -> rules.put(Long.toString(Integer.toUnsignedLong(oid)), fp));
        }
        return root.toString();
    }

    private static void key(ObjectNode range, String field, KeyBound bound) {
        if (bound instanceof KeyBound.Key key) {
            ArrayNode a = range.putArray(field);
            key.values().forEach(a::add);
        } else {
            range.putNull(field); // KeyBound.OPEN
        }
    }

    private static List<String> key(JsonNode n) {
        if (n == null || n.isNull()) {
            return null;
        }
        List<String> out = new ArrayList<>();
        n.forEach(v -> out.add(v.asText()));
        return out;
    }

    /**
     * A table as stored (a task's, a landed one): {@link TableRef#text()}, which quotes a part holding a dot or a quote. Before, it was
     * {@link TableRef#toString()}, which does not: such a name is split at its first dot (a schema rarely holds one, and a
     * task that records its oid is found again by it, {@code OnlineSnapshotter.start}).
     */
    static TableRef storedTable(String text) {
        try {
            return TableRef.parse(text);
        } catch (IllegalArgumentException e) {
            int dot = text.indexOf('.');
            if (dot <= 0 || dot == text.length() - 1) {
                throw new IllegalArgumentException("checkpoint: online snapshot task of table '" + text + "': not schema.table", e);
            }
            return new TableRef(text.substring(0, dot), text.substring(dot + 1));
        }
    }

    /** Format 1 marked a task reading moved keys again by this comment at the start of its filter. */
    static final String V1_REREAD = "/* millrace: moved keys read again */ ";

    /**
     * Reads a checkpoint of format {@link Checkpoint#VERSION} or 1 (written by Millrace before 2026-12-07: a re-read task was
     * recognised by a comment in its filter, a reconciling copy by a flag), as a checkpoint of the current format; the
     * next checkpoint written replaces it (a user who upgrades keeps the position and any online copy in progress).
     */
    public static Checkpoint read(String json) {
        try {
            JsonNode root = MAPPER.readTree(json);
            int version = root.required("version").asInt();
            if (version != Checkpoint.VERSION && version != 1) {
                throw new IllegalArgumentException("checkpoint format version " + version + " is not supported (this build reads 1"
                        + " to " + Checkpoint.VERSION + ")" + (version > Checkpoint.VERSION ? "; it was written by a newer Millrace:"
                        + " run that one (no release writes an older format back)" : ""));
            }
            JsonNode id = root.required("identity");
            Identity identity = new Identity(id.required("system_id").asText(), id.required("database").asText(),
                    id.required("slot").asText(), id.required("publication").asText(), id.required("destination").asText());
            JsonNode snap = root.required("snapshot");
            List<TableRef> done = new ArrayList<>();
            snap.required("tables_done").forEach(n -> done.add(storedTable(n.asText())));
            List<SnapshotProgress.Chunk> chunks = new ArrayList<>();
            snap.path("chunks_done").forEach(n -> chunks.add(SnapshotProgress.Chunk.parse(n.asText(), CheckpointJson::storedTable)));
            SnapshotProgress progress = new SnapshotProgress(SnapshotProgress.State.valueOf(snap.required("state").asText()),
                    Lsn.parse(snap.required("consistent_point").asText()), done, chunks);
            List<OnlineTask> online = new ArrayList<>();
            for (JsonNode t : root.path("online")) {
                List<OnlineTask.KeyRange> ranges = new ArrayList<>();
                for (JsonNode r : t.required("remaining")) {
                    ranges.add(OnlineTask.KeyRange.stored(key(r.get("lo")), key(r.get("hi"))));
                }
                String filter = t.hasNonNull("filter") ? t.get("filter").asText() : null;
                OnlineTask.Kind kind;
                if (version == 1) { // upgraded here; written back as the current version with the next checkpoint
                    // In the order format 1's reader decided: the marker, then a filter, then the flag (a filtered task did
                    // not reconcile, whatever its flag said).
                    kind = filter != null && filter.startsWith(V1_REREAD) ? OnlineTask.Kind.REREAD
                            : filter != null ? OnlineTask.Kind.FILTERED
                            : t.path("reconcile").asBoolean(false) ? OnlineTask.Kind.RECONCILE : OnlineTask.Kind.COPY;
                    if (kind == OnlineTask.Kind.REREAD) {
                        filter = filter.substring(V1_REREAD.length());
                    }
                } else {
                    kind = OnlineTask.Kind.valueOf(t.required("kind").asText().toUpperCase(java.util.Locale.ROOT));
                }
                online.add(new OnlineTask(storedTable(t.required("table").asText()), kind, filter, ranges, t.path("rows_done").asLong(),
                        (int) t.path("oid").asLong(), key(t.get("key"))));
            }
            java.util.SortedMap<Integer, TableRef> tables = new java.util.TreeMap<>();
            for (JsonNode t : root.path("tables")) {
                tables.put((int) t.required("oid").asLong(), new TableRef(t.required("schema").asText(), t.required("table").asText()));
            }
            java.util.SortedMap<Integer, String> shapes = new java.util.TreeMap<>();
            root.path("shapes").properties().forEach(f -> shapes.put((int) Long.parseLong(f.getKey()), f.getValue().asText()));
            java.util.SortedMap<Integer, String> rules = new java.util.TreeMap<>();
            root.path("rules").properties().forEach(f -> rules.put((int) Long.parseLong(f.getKey()), f.getValue().asText()));
            Checkpoint.SlotLost lost = null;
            JsonNode l = root.get("slot_lost");
            if (l != null && !l.isNull()) {
                lost = new Checkpoint.SlotLost(Checkpoint.SlotLost.State.valueOf(l.required("state").asText()),
                        Lsn.parse(l.required("lost_at").asText()), Lsn.parse(l.required("new_slot_at").asText()),
                        l.required("reason").asText(), l.path("count").asInt(1));
            }
            return new Checkpoint(Checkpoint.VERSION, identity, Lsn.parse(root.required("flush_lsn").asText()),
                    new Position(Lsn.parse(root.required("applied_commit_lsn").asText()), root.required("applied_ordinal").asLong()),
                    progress, online, tables, lost, shapes, rules);
        } catch (Exception e) {
            throw new IllegalArgumentException("unreadable checkpoint: " + e.getMessage(), e);
        }
    }
}
