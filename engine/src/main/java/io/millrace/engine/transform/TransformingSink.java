package io.millrace.engine.transform;

import io.millrace.core.change.ChangeEvent;
import io.millrace.core.change.Checkpoint;
import io.millrace.core.schema.ColumnInfo;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;
import io.millrace.core.sink.CopyableSink;
import io.millrace.core.sink.Sink;
import io.millrace.core.sink.SinkReset;
import io.millrace.core.types.UnchangedToast;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A destination behind its transforms: each event's relation and row images are those of {@link Transforms} before the
 * destination sees them. Snapshot rows, online snapshot rows, streamed changes and the truncates that open a copy all
 * reach a destination through {@link #write}, so this is the one place they are transformed. Owned by the destination's
 * writer thread, as the destination is.
 */
class TransformingSink implements Sink {
    /** Shapes planned so far, by the relation instance (a new shape is a new instance); cleared past this many. */
    private static final int MAX_PLANS = 4096;

    private final Sink sink;
    private Transforms transforms;
    /** Transforms to use from the next write on (a reload), handed over from any thread. */
    private final java.util.concurrent.atomic.AtomicReference<Transforms> next = new java.util.concurrent.atomic.AtomicReference<>();
    private final Map<RelationInfo, Plan> plans = new IdentityHashMap<>();
    private Mac mac;

    TransformingSink(Sink sink, Transforms transforms) {
        this.sink = sink;
        this.transforms = transforms;
    }

    /** What one shape of a table becomes: the source's columns kept (by index) and the mask of each, or null. */
    private record Plan(RelationInfo in, RelationInfo out, int[] keep, Mask[] masks) {
    }

    /** {@code transforms.toast: complete}: fills unchanged TOASTed values before the transforms; null when off. */
    private ToastCompleter completer;

    /** The wrapped sink while no rule applies (and none is about to by a reload) and no value is completed, else this. */
    Sink plainDelegate() {
        return transforms.isEmpty() && next.get() == null && completer == null ? sink : this;
    }

    Sink wrapped() {
        return sink;
    }

    /** Completes unchanged TOASTed values from the next write on; before {@link #open}. */
    void completer(ToastCompleter c) {
        this.completer = c;
    }

    @Override
    public String name() {
        return sink.name();
    }

    @Override
    public boolean transactional() {
        return sink.transactional();
    }

    /** As the destination says: a transform changes the rows, not when the destination stores its checkpoint. */
    @Override
    public boolean storesLater() {
        return sink.storesLater();
    }

    @Override
    public io.millrace.core.Lsn storedFlushLsn() {
        return sink.storedFlushLsn();
    }

    /** As the destination says, with no transform: one would have to apply to the value it fills too (a mask). */
    @Override
    public boolean fillsAddedColumnDefaults() {
        return sink.fillsAddedColumnDefaults() && transforms.isEmpty() && (next.get() == null || next.get().isEmpty());
    }

    /**
     * The tables the destination holds, by oid, under the names it holds them as (its rule's names), as it follows them
     * ({@link io.millrace.core.change.SourceTables}) from its last checkpoint through the events it was given. Owned by the
     * writer thread.
     */
    private java.util.SortedMap<Integer, TableRef> held = java.util.Collections.emptySortedMap();

    /**
     * The rules each held table was last written under here ({@link Checkpoint#rules}), as the destination's last
     * checkpoint records them. Owned by the writer thread.
     */
    private java.util.SortedMap<Integer, String> written = java.util.Collections.emptySortedMap();
    /**
     * Tables whose rule a reload changed, by oid, with the rule they were written under before: that one stays recorded
     * until a checkpoint carries their reconciling copy (INV: RESUME — a crash before it leaves a table a start copies
     * again, never one recorded under rules its rows do not have). Owned by the writer thread.
     */
    private final Map<Integer, String> recopying = new java.util.HashMap<>();
    /** The tables the first checkpoint written here copies whole (the start's copies), by oid; null before it. */
    private java.util.Set<Integer> startCopies;
    /** The tables the checkpoint of the batch being written copies whole (its unfiltered online tasks), by oid. */
    private java.util.Set<Integer> copying = java.util.Set.of();
    /** Of {@link #recopying}: the rows a reconciling copy under way at the reload had done (that copy is the old rules'). */
    private final Map<Integer, Long> staleCopy = new java.util.HashMap<>();
    /** Whether no checkpoint was written here since {@link #open}: the first is the start's. Owned by the writer thread. */
    private boolean firstWrite = true;
    /** The source's names of the tables of the last checkpoint written here, by oid. Owned by the writer thread. */
    private java.util.SortedMap<Integer, TableRef> namesWritten = java.util.Collections.emptySortedMap();
    /** Each table's {@link Transforms#fingerprint} under {@link #transforms}, as made so far; cleared with them. */
    private final Map<TableRef, String> fingerprints = new java.util.HashMap<>();

    /**
     * The destination's checkpoint, its tables under the source's names: a destination holds a renamed table under the
     * rule's name ({@link #write}); the engine follows tables by their names in the source.
     */
    @Override
    public Optional<Checkpoint> open() {
        Optional<Checkpoint> cp = sink.open();
        held = cp.map(Checkpoint::tables).orElse(java.util.Collections.emptySortedMap());
        written = cp.map(Checkpoint::rules).orElse(java.util.Collections.emptySortedMap());
        Optional<Checkpoint> named = cp.map(this::sourceNames);
        namesWritten = named.map(Checkpoint::tables).orElse(java.util.Collections.emptySortedMap());
        firstWrite = true;
        startCopies = null;
        return named;
    }

    /** {@code cp} with the tables it holds under the source's names where a rule gave the name (else as they are). */
    private Checkpoint sourceNames(Checkpoint cp) {
        if (cp.tables().isEmpty() || !transforms.renames()) {
            return cp;
        }
        java.util.TreeMap<Integer, TableRef> names = new java.util.TreeMap<>();
        cp.tables().forEach((oid, t) -> {
            TableRef n = transforms.sourceName(t);
            names.put(oid, n == null ? t : n);
        });
        return cp.withTables(names);
    }

    /**
     * {@code cp} (the engine's: source names) with each table under the name the destination holds it as after
     * {@code out}: followed from its last checkpoint through the events as the destination follows them, so a rename
     * takes effect where the destination renames the table (a streamed change under the new name) and nowhere else —
     * a table the batch does not touch keeps the name it has there, also when a reload or a restart changed its rule.
     * A table the destination never held takes its rule's name.
     */
    private Checkpoint destinationNames(Checkpoint cp, List<ChangeEvent> out) {
        java.util.SortedMap<Integer, TableRef> after = io.millrace.core.change.SourceTables.follow(held, out).held();
        if (cp == null) {
            return null;
        }
        java.util.TreeMap<Integer, TableRef> names = new java.util.TreeMap<>();
        cp.tables().forEach((oid, t) -> names.put(oid, after.containsKey(oid) ? after.get(oid) : transforms.destinationName(t)));
        return cp.withTables(names);
    }

    /** Uses {@code t} from the next {@link #write} on (a batch is transformed by one value of the transforms). Any thread. */
    void replace(Transforms t) {
        next.set(t);
    }

    @Override
    public void write(List<ChangeEvent> events, Checkpoint checkpoint) {
        Transforms n = next.getAndSet(null);
        if (n != null) {
            if (checkpoint != null) {
                checkpoint.tables().forEach((oid, t) -> {
                    String before = fingerprint(t);
                    if (!before.equals(n.fingerprint(t))) {
                        recopying.putIfAbsent(oid, before);
                        // a copy under way now ran under the old rules: only one begun again after this (fewer rows done) counts
                        checkpoint.online().stream().filter(x -> x.oid() == oid && x.reconcile() && x.filter() == null).findFirst()
                                .ifPresent(x -> staleCopy.put(oid, x.rowsDone()));
                    }
                });
            }
            transforms = n;
            plans.clear();
            fingerprints.clear();
            mac = null; // the salt may have changed
        }
        if (completer != null) {
            events = completer.complete(events); // raw values first: a mask then applies to the value, as to any other
        }
        copying = checkpoint == null ? java.util.Set.of() : checkpoint.online().stream().filter(t -> t.filter() == null)
                .map(io.millrace.core.change.OnlineTask::oid).collect(java.util.stream.Collectors.toSet());
        if (startCopies == null && checkpoint != null) {
            startCopies = copying;
        }
        List<ChangeEvent> out = transforms.isEmpty() ? events : transform(events);
        Checkpoint stamped = withRules(checkpoint, events);
        Checkpoint named = destinationNames(stamped, out);
        sink.write(out, named);
        if (named != null) {
            held = named.tables(); // durable now: the destination committed the batch with it
            written = named.rules();
            namesWritten = stamped.tables();
            firstWrite = false;
        }
    }

    private String fingerprint(TableRef t) {
        return fingerprints.computeIfAbsent(t, transforms::fingerprint);
    }

    /**
     * {@code cp} (source names) recording the rule each table it holds is written under: for a table of the batch, the
     * transforms' for the name its events carry (the stream's, which follows renames); for the others the one recorded
     * before — at the first write, the start's (it records today's rule, by oid, for a table it copies again) — or, for a
     * table new here, the transforms' for its name. A table a reload changed keeps its old rule until its reconciling copy
     * is in a checkpoint. Not from the names a checkpoint holds for tables the batch does not touch: a rename while
     * stopped leaves the old one there, whose rule may be another's (a user's fixed rule was refused at every start).
     */
    private Checkpoint withRules(Checkpoint cp, List<ChangeEvent> events) {
        if (cp == null) {
            return null;
        }
        if (!recopying.isEmpty()) {
            recopying.keySet().removeIf(oid -> !cp.tables().containsKey(oid) || cp.online().stream().anyMatch(t -> t.oid() == oid
                    && t.reconcile() && t.filter() == null && t.rowsDone() < staleCopy.getOrDefault(oid, Long.MAX_VALUE)));
            staleCopy.keySet().retainAll(recopying.keySet());
        }
        Map<Integer, TableRef> seen = new java.util.HashMap<>();
        RelationInfo last = null;
        for (ChangeEvent e : events) {
            if (e.relation() != last) {
                last = e.relation();
                seen.put(last.oid(), last.table());
            }
        }
        java.util.TreeMap<Integer, String> rules = new java.util.TreeMap<>();
        cp.tables().forEach((oid, t) -> {
            String rule;
            if (recopying.containsKey(oid)) {
                rule = recopying.get(oid);
            } else if (seen.containsKey(oid)) {
                rule = fingerprint(seen.get(oid));
            } else if (firstWrite && cp.rules().containsKey(oid)) {
                rule = cp.rules().get(oid);
            } else if (written.containsKey(oid)) {
                rule = written.get(oid);
            } else {
                rule = fingerprint(t);
            }
            rules.put(oid, rule);
        });
        return cp.withRules(rules);
    }

    private List<ChangeEvent> transform(List<ChangeEvent> events) {
        List<ChangeEvent> out = events;
        for (int i = 0; i < events.size(); i++) {
            ChangeEvent e = events.get(i);
            Plan p = plan(e.relation());
            if (p == null) {
                if (out != events) {
                    out.add(e);
                }
                continue;
            }
            if (out == events) {
                out = new ArrayList<>(events.size());
                out.addAll(events.subList(0, i));
            }
            out.add(new ChangeEvent(e.op(), p.out, apply(p, e.before()), apply(p, e.after()), e.lsn(), e.position(), e.xid(),
                    e.commitTimeMicros(), e.snapshot()));
        }
        return out;
    }

    @Override
    public SinkReset reset(List<TableRef> tables, SinkReset.Data data) {
        Transforms t = next.get() != null ? next.get() : transforms;
        return sink.reset(tables.stream().map(x -> {
            TableRule r = t.forTable(x);
            return r == null ? x : r.destinationName(x); // the destination holds it under the name a rename gave it
        }).toList(), data);
    }

    @Override
    public void close() {
        try {
            sink.close();
        } finally {
            if (completer != null) {
                completer.close();
            }
        }
    }

    /** The plan of {@code r}, or null when no rule matches its table (the event passes unchanged). */
    private Plan plan(RelationInfo r) {
        Plan p = plans.get(r);
        if (p != null || plans.containsKey(r)) {
            return p;
        }
        if (plans.size() >= MAX_PLANS) {
            plans.clear(); // INV: BOUNDED — shapes of a long run; plans are cheap to make again
        }
        TableRule rule = transforms.forTable(r.table());
        sameRule(rule, r);
        if (rule != null) {
            failClosed(rule, r);
            List<Integer> keep = new ArrayList<>();
            List<Mask> masks = new ArrayList<>();
            for (int i = 0; i < r.columnCount(); i++) {
                ColumnInfo c = r.column(i);
                if (rule.keeps(c.name())) {
                    keep.add(i);
                    masks.add(rule.masks().get(c.name()));
                }
            }
            int[] k = keep.stream().mapToInt(Integer::intValue).toArray();
            Mask[] m = masks.toArray(new Mask[0]);
            java.util.Set<Integer> masked = new java.util.HashSet<>();
            for (int j = 0; j < k.length; j++) {
                if (m[j] != null) {
                    masked.add(k[j]);
                }
            }
            RelationInfo out = r.project(k, masked::contains);
            TableRef to = rule.destinationName(r.table());
            if (!to.equals(r.table())) {
                out = out.renamed(to);
            }
            p = new Plan(r, out, k, m);
        }
        claim(rule, p == null ? r.table() : p.out().table(), r);
        plans.put(r, p);
        return p;
    }

    /** The source table (by oid) each destination name a {@code rename} gave is taken by. */
    private final Map<TableRef, RelationInfo> names = new java.util.HashMap<>();

    /**
     * Refuses a {@code rename} that gives two source tables one name, or a table another's own name: their rows would
     * mix in one destination table (one key space, one schema), and a keyed destination would merge them. The batch is not
     * written and the checkpoint does not move (fail closed, as for a renamed masked column).
     */
    private void claim(TableRule rule, TableRef to, RelationInfo r) {
        RelationInfo held = names.putIfAbsent(to, r);
        if (held != null && held.oid() != r.oid()) {
            if (held.table().equals(r.table())) {
                names.put(to, r); // the source's name moved to another table (dropped and created again, renamed away): its own
                return;
            }
            throw new io.millrace.core.MillraceException(io.millrace.core.MillraceException.Kind.CONFIG, "config: "
                    + (rule != null && rule.rename() != null ? rule.setting() : "transforms") + ".rename gives " + r.table() + " and "
                    + held.table() + " one name in the destinations, " + to + ": their rows would mix in one table. Give each table a"
                    + " name of its own (a rename with {table} in it); this batch was not written");
        }
    }

    /**
     * Refuses a table that reached this destination under another rule than the one its name matches now: renamed in the
     * source while streaming, a table an exact-name rule matched matches none (or another), and its rows would pass
     * unmasked, in clear. The batch is not written and the checkpoint does not move; a
     * start with a rule that matches the new name as the old one did passes the held changes on under it.
     */
    private void sameRule(TableRule rule, RelationInfo r) {
        String was = written.get(r.oid());
        TableRef before = namesWritten.get(r.oid());
        if (was == null || before == null || before.equals(r.table()) || recopying.containsKey(r.oid()) || Transforms.sameStamp(was, fingerprint(r.table()))
                || startCopies != null && startCopies.contains(r.oid()) && copying.contains(r.oid())) {
            // a rule changed under the same name is the start's (copied again) or a reload's: only a rename is refused here; and
            // a table the start copies again (it refused a rename its rules did not follow) while that copy runs — not one a
            // copy begun later covers (a rewriting DDL of the renamed table would have it copied in clear)
            return;
        }
        throw new io.millrace.core.MillraceException(io.millrace.core.MillraceException.Kind.CONFIG, "config: table " + before
                + " was renamed to " + r.table() + " in the source, and now matches " + (rule == null ? "no transforms rule" : rule.setting())
                + ", not the rule its rows reached the destinations under: its changes are held back, since a mask or an excluded column"
                + " of that rule would pass in clear. Fix: make a rule match " + r.table() + " as the old one matched " + before
                + " (e.g. change its match), and start again; the held changes are then passed on under it");
    }

    /**
     * Refuses a shape in which a column the rule masks or leaves out is gone: renamed, its values would reach the
     * destinations in clear under the new name (a Relation message cannot tell a rename from a drop and an add). The
     * batch is not written and the checkpoint does not move, so after the rule is fixed the start passes these changes
     * on again, transformed by it.
     */
    private static void failClosed(TableRule rule, RelationInfo r) {
        List<String> guarded = new ArrayList<>(rule.masks().keySet());
        if (rule.include() == null) {
            guarded.addAll(rule.exclude());
        }
        for (String c : guarded) {
            if (r.columns().stream().noneMatch(col -> col.name().equals(c))) {
                throw new io.millrace.core.MillraceException(io.millrace.core.MillraceException.Kind.CONFIG, "config: " + rule.setting()
                        + " names column '" + c + "', which table " + r.table() + " no longer has (dropped or renamed while streaming):"
                        + " its changes are held back, since a renamed column would reach the destinations in clear. Fix the rule (name"
                        + " the column as it is now, or remove it) and start again; the held changes are then passed on transformed");
            }
        }
    }

    private Object[] apply(Plan p, Object[] row) {
        if (row == null) {
            return null;
        }
        Object[] out = new Object[p.keep.length];
        for (int j = 0; j < out.length; j++) {
            int i = p.keep[j];
            Object v = i < row.length ? row[i] : null;
            Mask m = p.masks[j];
            if (m == null || v == null || v == UnchangedToast.INSTANCE) {
                out[j] = v; // NULL stays NULL; an unchanged TOAST value stays unchanged (the destination holds its masked value)
            } else {
                out[j] = mask(m, text(p, i, v), p, j);
            }
        }
        return out;
    }

    /** The value's text form: PostgreSQL's input form of it (for text types, the value itself). */
    private static String text(Plan p, int sourceIndex, Object v) {
        return v instanceof String s ? s : p.in.codec(sourceIndex).toPgText(v);
    }

    private String mask(Mask m, String text, Plan p, int j) {
        if (m instanceof Mask.Custom c) {
            try {
                return c.transform().apply(p.in.table(), p.out.column(j).name(), text);
            } catch (RuntimeException e) {
                // the user's message may hold the value: it is left out, and so is the cause (its trace would be logged)
                throw new io.millrace.core.MillraceException(io.millrace.core.MillraceException.Kind.CONFIG, "transform java(" + c.name()
                        + ") failed on column '" + p.out.column(j).name() + "' of table " + p.in.table() + " with " + e.getClass().getName()
                        + " (its message is left out: it may hold the value). Fix the Transform, or mask the column otherwise");
            }
        }
        if (m instanceof Mask.Redact) {
            return Mask.Redact.VALUE;
        }
        if (m instanceof Mask.Truncate t) {
            return text.codePointCount(0, text.length()) <= t.length() ? text : text.substring(0, text.offsetByCodePoints(0, t.length()));
        }
        return hash(text);
    }

    private String hash(String text) {
        try {
            if (mac == null) {
                mac = Mac.getInstance("HmacSHA256");
                mac.init(new SecretKeySpec(transforms.salt().reveal().getBytes(StandardCharsets.UTF_8), "HmacSHA256"));
            }
            return HexFormat.of().formatHex(mac.doFinal(text.getBytes(StandardCharsets.UTF_8)));
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is not available in this JVM", e);
        }
    }

    /** The same, for a destination that can copy itself ({@link CopyableSink}): the copy holds what it was given. */
    static final class Copyable extends TransformingSink implements CopyableSink {
        private final CopyableSink sink;

        Copyable(CopyableSink sink, Transforms transforms) {
            super(sink, transforms);
            this.sink = sink;
        }

        @Override
        public Optional<Checkpoint> copyTo(Path target) {
            return sink.copyTo(target);
        }
    }
}
