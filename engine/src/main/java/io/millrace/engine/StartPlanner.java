package io.millrace.engine;

import io.millrace.core.Lsn;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.change.Checkpoint;
import io.millrace.core.change.Identity;
import io.millrace.core.change.OnlineTask;
import io.millrace.core.change.SnapshotProgress;
import io.millrace.core.schema.Ident;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;
import io.millrace.engine.config.EngineConfig.SnapshotMode;
import io.millrace.engine.transform.Transforms;
import io.millrace.source.SlotInUse;
import io.millrace.source.SourceConfig;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Decides how a pipeline starts — fresh, restart the snapshot, resume online, resume, or refuse — from what
 * {@link StartUp} read: the destinations' checkpoints, the slot, the publication and the configuration. Pure: no
 * I/O, no clock; {@link StartPlan} draws the decision and {@code StartPlannerTest} tables it.
 *
 * <p>The checks run in this order, each before anything is written (INV: IDENTITY first): a checkpoint of another
 * pipeline; some destinations with a checkpoint and some without; then the start itself.
 */
final class StartPlanner {
    static final int ONLINE_VERSION = 140000; // logical messages in pgoutput: the online snapshot's watermarks

    /** A destination as the start finds it: its name, the identity this pipeline gives it, its checkpoint. */
    record Destination(String name, Identity identity, Optional<Checkpoint> checkpoint) {
    }

    /**
     * The replication slot as the start finds it.
     *
     * @param confirmed its confirmed_flush_lsn, or null (missing, or never confirmed)
     * @param activePid the process holding it now, or null
     */
    record Slot(String name, boolean exists, Lsn confirmed, Integer activePid, boolean lost) {
        Slot(String name, boolean exists, Lsn confirmed, Integer activePid) {
            this(name, exists, confirmed, activePid, false);
        }
    }

    /**
     * What the start knows before it decides.
     *
     * @param tables          the captured tables as the catalog shows them, in the configuration's order
     * @param publicationExists whether the publication exists
     * @param unpublished     captured tables the existing publication lacks
     * @param signalTable     snapshot.signal_table, or null
     * @param signalPublished whether the existing publication holds the signal table
     * @param onSlotLost      source.on_slot_lost
     * @param rules           the rule each captured table reaches the destinations under now, by oid
     *                        ({@code Transforms.fingerprint}; {@link Checkpoint#rules})
     * @param ruleOf          the rule a table of a given name would reach them under now (the same fingerprint)
     * @param keyMasked       the captured tables whose rule masks a key column now, by oid, each with that column
     */
    record Facts(List<Destination> destinations, Slot slot, int serverVersion, SnapshotMode mode, List<RelationInfo> tables,
                 boolean publicationExists, List<TableRef> unpublished, TableRef signalTable, boolean signalPublished,
                 SourceConfig.OnSlotLost onSlotLost, Map<Integer, String> rules, java.util.function.Function<TableRef, String> ruleOf,
                 Map<Integer, String> keyMasked) {
        Facts(List<Destination> destinations, Slot slot, int serverVersion, SnapshotMode mode, List<RelationInfo> tables,
              boolean publicationExists, List<TableRef> unpublished, TableRef signalTable, boolean signalPublished,
              SourceConfig.OnSlotLost onSlotLost) {
            this(destinations, slot, serverVersion, mode, tables, publicationExists, unpublished, signalTable, signalPublished,
                    onSlotLost, Map.of(), t -> null, Map.of());
        }

        Facts(List<Destination> destinations, Slot slot, int serverVersion, SnapshotMode mode, List<RelationInfo> tables,
              boolean publicationExists, List<TableRef> unpublished, TableRef signalTable, boolean signalPublished) {
            this(destinations, slot, serverVersion, mode, tables, publicationExists, unpublished, signalTable, signalPublished,
                    SourceConfig.OnSlotLost.STOP);
        }

        long withCheckpoint() {
            return destinations.stream().filter(d -> d.checkpoint().isPresent()).count();
        }

        List<Checkpoint> checkpoints() {
            return destinations.stream().map(d -> d.checkpoint().orElseThrow()).toList();
        }

        RelationInfo relation(TableRef t) {
            return tables.stream().filter(r -> r.table().equals(t)).findFirst().orElseThrow();
        }
    }

    private StartPlanner() {
    }

    static StartPlan plan(Facts f) {
        StartPlan.Refuse refused = foreignCheckpoint(f.destinations());
        if (refused == null) {
            refused = mixedCheckpoints(f.destinations());
        }
        if (refused != null) {
            return refused;
        }
        boolean interrupted = f.destinations().stream().anyMatch(d -> running(d.checkpoint()));
        if (interrupted) {
            return resumeOnline(f);
        }
        return f.withCheckpoint() == 0 ? fresh(f) : resume(f);
    }

    private static boolean running(Optional<Checkpoint> cp) {
        return cp.isPresent() && cp.get().snapshot().state() == SnapshotProgress.State.RUNNING;
    }

    /** INV: IDENTITY — a destination holding another pipeline's checkpoint. */
    private static StartPlan.Refuse foreignCheckpoint(List<Destination> destinations) {
        for (Destination d : destinations) {
            String diff = d.checkpoint().map(cp -> d.identity().difference(cp.identity())).orElse(null);
            if (diff != null) {
                return new StartPlan.Refuse(Kind.IDENTITY, "destination '" + d.name() + "' holds a checkpoint of another pipeline: "
                        + diff + ". Resuming from it would skip or repeat changes.", " ",
                        "Point this pipeline at an empty destination, or remove that destination's checkpoint to start over.");
            }
        }
        return null;
    }

    /**
     * A crash while the first checkpoints are written one destination after the other leaves some with a RUNNING
     * checkpoint and some with none. A RUNNING snapshot starts over for every destination on a new slot, so a
     * destination without a checkpoint misses nothing then: that is an interrupted start (INV: RESUME). Otherwise a
     * destination without one was added to a running pipeline.
     */
    private static StartPlan.Refuse mixedCheckpoints(List<Destination> destinations) {
        long with = destinations.stream().filter(d -> d.checkpoint().isPresent()).count();
        boolean allRunning = destinations.stream().allMatch(d -> d.checkpoint().isEmpty() || running(d.checkpoint()));
        if (with == 0 || with == destinations.size() || allRunning) {
            return null;
        }
        List<String> parts = destinations.stream().map(d -> d.name() + ": " + (d.checkpoint().isPresent() ? "checkpoint" : "none")).toList();
        return new StartPlan.Refuse(Kind.CONFIG, "some destinations have a checkpoint and some do not (" + String.join(", ", parts)
                + "). A destination added to a running pipeline would miss the changes before it", "; ",
                "if a destination was not added but its checkpoint's place changed (a kafka destination's checkpoint_topic,"
                        + " a postgres destination's state_schema, a duckdb file, a jsonl directory), set it back; otherwise give the"
                        + " new destination a pipeline (and slot) of its own, or start all destinations afresh");
    }

    /** The publication's part: created when missing, else the captured tables it lacks and the signal table added. */
    private static StartPlan.Publication publication(Facts f) {
        TableRef signal = f.signalTable();
        if (!f.publicationExists()) {
            List<TableRef> published = new ArrayList<>(f.tables().stream().map(RelationInfo::table).toList());
            if (signal != null && !published.contains(signal)) {
                published.add(signal);
            }
            return new StartPlan.Publication(published, List.of(), false);
        }
        List<RelationInfo> add = f.unpublished().stream().map(f::relation).toList();
        boolean addSignal = signal != null && !f.signalPublished() && !f.unpublished().contains(signal);
        return new StartPlan.Publication(null, add, addSignal);
    }

    private static StartPlan fresh(Facts f) {
        boolean snapshot = f.mode() != SnapshotMode.NEVER;
        if (!f.slot().exists()) {
            return new StartPlan.Fresh(publication(f), snapshot);
        }
        if (!snapshot) {
            return new StartPlan.AdoptSlot(publication(f), f.slot().confirmed());
        }
        // INV: IDENTITY — a slot no destination has claimed may belong to another pipeline: never drop it.
        String slot = f.slot().name();
        return new StartPlan.Refuse(Kind.SOURCE_SETUP, "replication slot '" + slot + "' exists, but no destination holds a checkpoint"
                + " of it, so it may belong to another pipeline.", " ", "If it is left over from an earlier attempt of this one, drop it:"
                + " SELECT pg_drop_replication_slot(" + Ident.literal(slot) + "); to stream from it without copying the tables, set"
                + " snapshot.mode: never; otherwise choose another source.slot");
    }

    private static StartPlan restart(Facts f, String notOnline) {
        return new StartPlan.RestartSnapshot(publication(f), f.mode() != SnapshotMode.NEVER, f.slot().exists(), notOnline);
    }

    /**
     * An interrupted snapshot whose slot (and so its consistent point) survives: the tables that landed stay and the
     * others are copied online while the stream replays from the consistent point (INV: RESUME, WATERMARK). Needs
     * PostgreSQL 14+ and a key on every unfinished table; otherwise the snapshot starts over on a new slot.
     */
    private static StartPlan resumeOnline(Facts f) {
        if (!f.slot().exists() || f.slot().lost() || f.serverVersion() < ONLINE_VERSION || f.mode() == SnapshotMode.NEVER
                || f.withCheckpoint() != f.destinations().size()) {
            return restart(f, null);
        }
        List<Checkpoint> cps = f.checkpoints();
        Lsn cp = cps.get(0).snapshot().consistentPoint();
        if (cp.equals(Lsn.ZERO) || cps.stream().anyMatch(c -> c.snapshot().state() != SnapshotProgress.State.RUNNING
                || !c.snapshot().consistentPoint().equals(cp) || !c.flushLsn().equals(cp))) {
            return restart(f, null); // a claim without a slot position, or destinations that disagree: start over
        }
        Set<TableRef> done = new HashSet<>(cps.get(0).snapshot().tablesDone());
        cps.forEach(c -> done.retainAll(c.snapshot().tablesDone()));
        List<RelationInfo> left = f.tables().stream().filter(r -> !done.contains(r.table())).toList();
        Optional<RelationInfo> keyless = left.stream().filter(r -> !r.hasKey()).findFirst();
        if (keyless.isPresent()) {
            return restart(f, "table " + keyless.get().table() + " has no key, so it cannot be copied online: the snapshot starts over");
        }
        if (f.slot().confirmed() != null && f.slot().confirmed().isAfter(cp)) {
            return confirmedPast(f.slot(), cp);
        }
        List<OnlineTask> tasks = new ArrayList<>(left.stream().map(OnlineTask::whole).toList());
        // a landed table whose rules changed while stopped (Ctrl-C in the first snapshot, a mask added): copied again too
        List<RelationInfo> recopy = rulesChanged(f).stream().filter(r -> !left.contains(r)).toList();
        recopy.forEach(r -> tasks.add(OnlineTask.reconciling(r)));
        List<Checkpoint> next = cps.stream().map(c -> withTodaysRules(c.withSnapshot(new SnapshotProgress(SnapshotProgress.State.DONE, cp,
                List.copyOf(done))).withOnline(tasks), f, recopy)).toList();
        return new StartPlan.ResumeOnline(publication(f), next, done.size(), left.stream().map(RelationInfo::table).toList(), cp);
    }

    private static StartPlan resume(Facts f) {
        Slot slot = f.slot();
        StartPlan.Refuse renamed = renamedAwayFromItsRule(f); // before a lost slot's re-copy of every table, which would copy it in clear
        if (renamed == null) {
            renamed = keyMaskChanged(f);
        }
        if (renamed != null) {
            return renamed;
        }
        StartPlan lost = slotLost(f);
        if (lost != null) {
            return lost;
        }
        if (!slot.exists()) {
            return new StartPlan.Refuse(Kind.SOURCE_SETUP, "replication slot '" + slot.name() + "' does not exist, but the destinations"
                    + " hold checkpoints: it was dropped (or the server was replaced) while Millrace was stopped, and changes since may"
                    + " be lost. Millrace does not re-copy silently", ": ", "start again with empty destinations (millrace reset removes their"
                    + " checkpoints and empties their tables) to take a new snapshot, or set source.on_slot_lost: resnapshot to have Millrace create"
                    + " a new slot and copy every table again online, deleting the rows the source no longer has");
        }
        List<Checkpoint> cps = f.checkpoints();
        Lsn resumeAt = cps.stream().map(Checkpoint::flushLsn).reduce(Lsn::min).orElseThrow();
        if (slot.confirmed() != null && slot.confirmed().isAfter(resumeAt)) {
            return confirmedPast(slot, resumeAt);
        }
        Set<Integer> held = new HashSet<>();
        cps.forEach(c -> held.addAll(c.tables().keySet()));
        List<Checkpoint> next = f.mode() == SnapshotMode.NEVER ? cps : cps.stream().map(c -> withAdded(c, f, held)).toList();
        List<RelationInfo> recopy = f.serverVersion() < ONLINE_VERSION || f.mode() == SnapshotMode.NEVER ? List.of() : rulesChanged(f);
        if (!recopy.isEmpty()) {
            next = next.stream().map(c -> withTodaysRules(withRecopied(c, recopy), f, recopy)).toList();
        }
        Checkpoint low = lowest(next);
        if (f.serverVersion() < ONLINE_VERSION && !low.online().isEmpty() && f.mode() != SnapshotMode.INITIAL_ONLY) {
            return new StartPlan.Refuse(Kind.SOURCE_SETUP, "online snapshots need PostgreSQL 14 or newer (logical messages in pgoutput);"
                    + " this server is " + f.serverVersion() + ".", " ", "Copy the tables with a fresh pipeline instead");
        }
        return new StartPlan.Resume(publication(f), next);
    }

    /**
     * The slot was invalidated ({@code wal_status = lost}) or dropped while every destination holds a checkpoint of it, or
     * a replacement of it was interrupted (a checkpoint says {@code REPLACING}). With {@code on_slot_lost: resnapshot}:
     * {@link StartPlan.ReplaceSlot}, every destination's checkpoint marked REPLACING first, with a reconciling online task
     * for every captured table. Null when the slot is as the checkpoints left it.
     */
    private static StartPlan slotLost(Facts f) {
        Slot slot = f.slot();
        List<Checkpoint> cps = f.checkpoints();
        Checkpoint.SlotLost interrupted = cps.stream().map(Checkpoint::slotLost)
                .filter(l -> l != null && l.state() == Checkpoint.SlotLost.State.REPLACING).findFirst().orElse(null);
        if (interrupted == null && slot.exists() && !slot.lost()) {
            return null;
        }
        String reason = interrupted != null ? interrupted.reason() : slot.lost() ? "slot '" + slot.name() + "' was invalidated"
                + " (wal_status = lost): the server removed WAL it still needed (max_slot_wal_keep_size)"
                : "slot '" + slot.name() + "' does not exist: it was dropped (or the server was replaced) while Millrace was stopped";
        if (f.onSlotLost() != SourceConfig.OnSlotLost.RESNAPSHOT) {
            if (interrupted != null) {
                return new StartPlan.Refuse(Kind.SOURCE_SETUP, "the replacement of lost slot '" + slot.name() + "' was interrupted ("
                        + reason + ")", ": ", "set source.on_slot_lost: resnapshot to finish it, or start again with empty destinations");
            }
            if (slot.lost()) { // the preflight says so first; this covers a slot lost between the two
                return new StartPlan.Refuse(Kind.SOURCE_SETUP, reason + "; changes were lost for this slot", ": ", "drop it (SELECT"
                        + " pg_drop_replication_slot(" + Ident.literal(slot.name()) + ");) and start again with a fresh destination so"
                        + " the tables are copied anew, or set source.on_slot_lost: resnapshot");
            }
            return null; // a missing slot: the refusal of resume()
        }
        if (f.serverVersion() < ONLINE_VERSION) {
            return new StartPlan.Refuse(Kind.SOURCE_SETUP, reason + "; source.on_slot_lost: resnapshot copies the tables again online,"
                    + " which needs PostgreSQL 14 or newer (this server is " + f.serverVersion() + ")", ": ",
                    "start again with empty destinations (millrace reset removes their checkpoints and empties their tables) to take a new snapshot");
        }
        Optional<RelationInfo> keyless = f.tables().stream().filter(r -> !r.hasKey()).findFirst();
        if (keyless.isPresent()) {
            return new StartPlan.Refuse(Kind.SOURCE_SETUP, reason + "; source.on_slot_lost: resnapshot copies every table again online,"
                    + " in key order, and table " + keyless.get().table() + " has no key", ": ", "give it a primary key (or a replica"
                    + " identity index), or start again with empty destinations (millrace reset removes their checkpoints and empties their tables)");
        }
        List<OnlineTask> tasks = f.tables().stream().map(OnlineTask::reconciling).toList();
        int count = cps.stream().map(Checkpoint::slotLost).filter(l -> l != null).mapToInt(Checkpoint.SlotLost::count).max().orElse(0);
        List<Checkpoint> replacing = new ArrayList<>();
        for (Checkpoint c : cps) {
            Checkpoint.SlotLost l = c.slotLost();
            Checkpoint.SlotLost mark = l != null && l.state() == Checkpoint.SlotLost.State.REPLACING ? l
                    : new Checkpoint.SlotLost(Checkpoint.SlotLost.State.REPLACING, c.flushLsn(), Lsn.ZERO, reason,
                    interrupted != null ? Math.max(count, 1) : count + 1);
            replacing.add(c.withOnline(tasks).withSlotLost(mark));
        }
        return new StartPlan.ReplaceSlot(publication(f), replacing, reason, slot.exists(), interrupted != null);
    }

    /**
     * INV: IDENTITY (and DURABLE) — this pipeline never confirms past what every destination holds, so a slot confirmed
     * further is not the one these checkpoints were written against: the server would silently start at its confirmed
     * position and the changes in between would be skipped. Held by a process now, it was moved by a pipeline running
     * beside this one: SLOT_IN_USE, not IDENTITY.
     */
    private static StartPlan.Refuse confirmedPast(Slot slot, Lsn resumeAt) {
        if (slot.activePid() != null) {
            return new StartPlan.Refuse(Kind.SLOT_IN_USE, SlotInUse.detail(slot.name(), slot.activePid()), ". Fix: ",
                    SlotInUse.fix(slot.activePid()));
        }
        return new StartPlan.Refuse(Kind.IDENTITY, "replication slot '" + slot.name() + "' is confirmed up to " + slot.confirmed()
                + ", past the destinations' checkpoint " + resumeAt + ": the slot was re-created or advanced by another process (another"
                + " pipeline with the same source.slot?) while Millrace was stopped, and the changes between the two are no longer in it."
                + " Millrace does not skip them silently", ": ", "give each pipeline its own source.slot, and start this one again with"
                + " empty destinations (millrace reset removes their checkpoints and empties their tables) to take a new snapshot");
    }

    /**
     * Tables added to a pipeline that streams are copied while it streams. INV: RESUME — the copy is recorded in every
     * destination before the table joins the publication: a crash in between must not leave a published table that
     * nobody copies (the next start would find it published and copy nothing). A table a destination already holds (its
     * oid in {@code held}, the destinations' {@link Checkpoint#tables()}) was captured before and taken out of the
     * publication since, while Millrace was stopped or before the running pipeline saw it ({@code TableJoiner}): its copy
     * reconciles, deleting the rows the source deleted meanwhile, which no change in the stream carries.
     */
    private static Checkpoint withAdded(Checkpoint cp, Facts f, Set<Integer> held) {
        if (!f.publicationExists()) {
            return cp;
        }
        List<OnlineTask> tasks = new ArrayList<>(cp.online());
        for (TableRef t : f.unpublished()) {
            RelationInfo r = f.relation(t);
            // By oid (copies): a task recorded for a table dropped since, whose name this one took, is not this one's (matched
            // by name, the new table joined the publication uncopied; found by the crash matrix).
            if (tasks.stream().noneMatch(x -> copies(x, r))) {
                tasks.add(held.contains(r.oid()) ? OnlineTask.reconciling(r) : OnlineTask.whole(r));
            }
        }
        return cp.withOnline(tasks);
    }

    /**
     * The captured tables some destination holds under another rule than the transforms give them now ({@link
     * Checkpoint#rules}): the rule was changed in the configuration while Millrace was stopped, so the rows the destination
     * holds are masked, filtered or named as before. A table a checkpoint holds without a recorded rule (written by a
     * release that did not record them) is taken as written under today's.
     */
    static List<RelationInfo> rulesChanged(Facts f) {
        List<RelationInfo> changed = new ArrayList<>();
        for (RelationInfo r : f.tables()) {
            String now = f.rules().get(r.oid());
            boolean differs = now != null && f.destinations().stream().flatMap(d -> d.checkpoint().stream())
                    .anyMatch(c -> c.tables().containsKey(r.oid()) && c.rules().containsKey(r.oid()) && !Transforms.sameStamp(now, c.rules().get(r.oid())));
            if (differs) {
                changed.add(r);
            }
        }
        return changed;
    }

    /**
     * A table renamed in the source whose rule changed with its name (an exact-name rule, or a pattern, matches it no
     * more): not copied again under the rule of its new name, which would put its rows in clear where a mask of the old
     * rule hid them — the user changed no rule: today's rules give its old name the rule its rows were written under.
     * Refused, naming the fix; a rule that matches the new name as the old one did passes. Where today's rules give the
     * old name another rule too, the user changed them, and the table is copied again under them (a renaming rule changed
     * while stopped: the name a checkpoint holds is then the destination's, which no rule gives back).
     */
    private static StartPlan.Refuse renamedAwayFromItsRule(Facts f) {
        for (RelationInfo r : rulesChanged(f)) {
            for (Checkpoint c : f.checkpoints()) {
                TableRef before = c.tables().get(r.oid());
                String was = c.rules().get(r.oid());
                if (before != null && !before.equals(r.table()) && was != null && !Transforms.sameStamp(was, f.rules().get(r.oid()))
                        && Transforms.sameStamp(was, f.ruleOf().apply(before))) {
                    return new StartPlan.Refuse(Kind.CONFIG, "config: table " + before + " was renamed to " + r.table() + " in the source,"
                            + " and the transforms rules its name matches now are not the ones its rows reached the destinations under:"
                            + " copied again under them, a mask or an excluded column of the old rule would pass in clear.", " Fix: ",
                            "make a rule match " + r.table() + " as the old one matched " + before + " (e.g. change its match), and start"
                            + " again; to change its rules after that, reload them while it runs");
                }
            }
        }
        return null;
    }

    /**
     * A table whose rule changed while stopped and masks a key column otherwise now (a mask added, taken away or changed,
     * or the salt of its hash): the destinations hold its rows under the keys they have, and a copy cannot re-key them —
     * every row would be there twice, the old keys as they were (a user's 1,000 rows became 2,000). Refused, as a reload
     * refuses it. Where a checkpoint's stamp tells what the rule masked ({@link Transforms#keyMaskChanged(String, String,
     * RelationInfo)}), a change that leaves the key's mask as it was passes (the table is copied again); a stamp of the
     * release before does not tell, and a key masked now is refused.
     */
    private static StartPlan.Refuse keyMaskChanged(Facts f) {
        for (RelationInfo r : rulesChanged(f)) {
            String now = f.rules().get(r.oid());
            List<String> was = f.checkpoints().stream().map(c -> c.rules().get(r.oid()))
                    .filter(w -> w != null && !Transforms.sameStamp(w, now)).toList();
            String key = was.stream().map(w -> Transforms.keyMaskChanged(w, now, r)).filter(java.util.Objects::nonNull).findFirst()
                    .orElse(was.stream().anyMatch(w -> !Transforms.tellsMasks(w)) ? f.keyMasked().get(r.oid()) : null);
            if (key != null) {
                return new StartPlan.Refuse(Kind.CONFIG, "config: the transforms of " + r.table() + " changed while Millrace was stopped,"
                        + " and so did the mask of its key column '" + key + "' (a mask added, taken away or changed, or the salt of"
                        + " its hash): the destinations hold its rows under the keys they have, and a copy cannot re-key them (each row"
                        + " would be there twice, the old keys as they were).", " Fix: ", "put the rule and the salt back as they were,"
                        + " or start over with empty destinations (millrace reset CONFIG --data drop, then run)");
            }
        }
        return null;
    }

    /**
     * {@code cp} with a fresh reconciling copy of each table in {@code recopy} (one under way is replaced): its rows reach every
     * destination again under today's rules, and rows a new row filter leaves out are deleted (INV: WATERMARK, COVER), as
     * a reload of the transforms does. INV: RESUME — recorded before anything is written under the new rules.
     */
    private static Checkpoint withRecopied(Checkpoint cp, List<RelationInfo> recopy) {
        List<OnlineTask> tasks = new ArrayList<>(cp.online());
        for (RelationInfo r : recopy) {
            // one under way, even reconciling, landed its chunks under the old rules: a fresh copy replaces it
            tasks.removeIf(t -> copies(t, r));
            tasks.add(OnlineTask.reconciling(r));
        }
        return cp.withOnline(tasks);
    }

    /**
     * {@code cp} recording today's rule for each table of {@code recopy}, by oid: its copy, recorded in the same write, is
     * made under it. The start knows the rule by oid; a destination would take it by the name its checkpoint holds,
     * which a rename while stopped (or a renaming rule changed) leaves behind.
     */
    private static Checkpoint withTodaysRules(Checkpoint cp, Facts f, List<RelationInfo> recopy) {
        java.util.TreeMap<Integer, String> rules = new java.util.TreeMap<>(cp.rules());
        for (RelationInfo r : recopy) {
            String now = f.rules().get(r.oid());
            if (now != null && cp.tables().containsKey(r.oid())) {
                rules.put(r.oid(), now);
            }
        }
        return cp.withRules(rules);
    }

    /** Whether {@code task} copies {@code table}: by oid, or by name for a task that has none (a signal's). */
    private static boolean copies(OnlineTask task, RelationInfo table) {
        return task.oid() == table.oid() || (task.oid() == 0 && task.table().equals(table.table()));
    }

    /** The checkpoint furthest behind: its online tasks have the most left. */
    static Checkpoint lowest(List<Checkpoint> cps) {
        Checkpoint low = cps.get(0);
        for (Checkpoint c : cps) {
            if (c.applied().compareTo(low.applied()) < 0) {
                low = c;
            }
        }
        return low;
    }
}
