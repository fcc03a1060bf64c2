package io.millrace.engine;

import io.millrace.core.Lsn;
import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.change.Checkpoint;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;

import java.util.List;

/**
 * What a start does, as {@link StartPlanner} decided it from the destinations' checkpoints, the slot and the
 * configuration; {@link StartUp} carries it out. Every plan but {@link Refuse} also says what the publication
 * needs ({@link Publication}), applied before the start itself and only after the identity check passed.
 *
 * <pre>
 *   no checkpoint ─────────┬─ slot missing ─────────────────────────────▶ Fresh
 *                          ├─ slot exists, snapshot.mode never ─────────▶ AdoptSlot
 *                          └─ slot exists otherwise ────────────────────▶ Refuse (SOURCE_SETUP)
 *   snapshot RUNNING ──────┬─ slot and consistent point kept, PG 14+,
 *   (an interrupted start) │  every unfinished table keyed:
 *                          │    slot confirmed past the consistent point ▶ Refuse (SLOT_IN_USE or IDENTITY)
 *                          │    otherwise ──────────────────────────────▶ ResumeOnline
 *                          └─ otherwise ────────────────────────────────▶ RestartSnapshot
 *   every destination ─────┬─ slot lost or missing, or its replacement
 *   holds a checkpoint     │  interrupted, on_slot_lost: resnapshot ────▶ ReplaceSlot (Refuse: PG &lt; 14, a keyless table)
 *                          ├─ slot missing ─────────────────────────────▶ Refuse (SOURCE_SETUP)
 *   holds a checkpoint     ├─ slot confirmed past the checkpoints ──────▶ Refuse (SLOT_IN_USE or IDENTITY)
 *                          ├─ online tasks left on PostgreSQL &lt; 14 ────▶ Refuse (SOURCE_SETUP)
 *                          └─ otherwise ────────────────────────────────▶ Resume
 *   a checkpoint of another pipeline, or some destinations with one and
 *   some without (not an interrupted start) ───────────────────────────▶ Refuse (IDENTITY, CONFIG)
 * </pre>
 */
sealed interface StartPlan {

    /**
     * The publication's part of a start.
     *
     * @param create the tables to create the publication for (the signal table included), or null when it exists
     * @param add    captured tables the existing publication lacks (added by their current names)
     * @param addSignal whether the signal table joins the existing publication
     */
    record Publication(List<TableRef> create, List<RelationInfo> add, boolean addSignal) {
        static final Publication NONE = new Publication(null, List.of(), false);
    }

    /** A plan that starts (every plan but {@link Refuse}). */
    sealed interface Go extends StartPlan {
        Publication publication();
    }

    /** A start on a new slot, the tables copied when {@code snapshot()}. */
    sealed interface OnNewSlot extends Go {
        boolean snapshot();
    }

    /** A start from the destinations' checkpoints, as rewritten by the plan: written before the publication changes. */
    sealed interface FromCheckpoints extends Go {
        List<Checkpoint> checkpoints();
    }

    /**
     * No destination holds a checkpoint and there is no slot: claim it in every destination, create it (with an
     * exported snapshot when {@code snapshot}), then copy the tables.
     */
    record Fresh(Publication publication, boolean snapshot) implements OnNewSlot {
    }

    /**
     * An initial snapshot was interrupted before it landed: start over on a new slot ({@code dropSlot}: the old one
     * is dropped first), each destination that holds a checkpoint truncating the tables first when {@code snapshot}.
     * {@code notOnline} says why the landed tables cannot stay (for the log), or is null.
     */
    record RestartSnapshot(Publication publication, boolean snapshot, boolean dropSlot, String notOnline) implements OnNewSlot {
    }

    /** Snapshot mode never and a slot nobody claimed: stream from it as it is, from its confirmed position. */
    record AdoptSlot(Publication publication, Lsn from) implements Go {
    }

    /**
     * An interrupted snapshot whose slot survives: the landed tables stay, the others ({@code left}) are copied
     * online while streaming from the consistent point. {@code checkpoints} (snapshot done, the tables as online
     * tasks) are written to the destinations first.
     */
    record ResumeOnline(Publication publication, List<Checkpoint> checkpoints, int landed, List<TableRef> left,
                        Lsn consistentPoint) implements FromCheckpoints {
    }

    /**
     * The slot was lost (invalidated or dropped) under checkpoints, and {@code source.on_slot_lost} is resnapshot: write
     * {@code replacing} (REPLACING, a reconciling task per captured table) to every destination, drop the slot when
     * {@code dropSlot} (the lost one, or the new one of an interrupted replacement), create a new one, re-bind the
     * checkpoints to its consistent point (REPLACED) and resume there (INV: IDENTITY — deliberate and recorded).
     */
    record ReplaceSlot(Publication publication, List<Checkpoint> replacing, String reason, boolean dropSlot, boolean again)
            implements Go {
    }

    /**
     * Every destination holds a checkpoint: streaming resumes at the lowest durable position (INV: RESUME).
     * {@code checkpoints} are the destinations' own, with online tasks for tables added to the configuration.
     */
    record Resume(Publication publication, List<Checkpoint> checkpoints) implements FromCheckpoints {
    }

    /**
     * The start is refused before anything is written: {@code message()} is {@code reason + joint + fix}, the
     * engine's wording.
     */
    record Refuse(Kind kind, String reason, String joint, String fix) implements StartPlan {
        String message() {
            return reason + joint + fix;
        }

        MillraceException error() {
            return new MillraceException(kind, message());
        }
    }
}
