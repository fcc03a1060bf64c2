package io.millrace.core.change;

/**
 * What a checkpoint belongs to (INV: IDENTITY). Resuming from a checkpoint whose identity differs
 * from the running pipeline's fails; it never silently re-reads or skips.
 *
 * @param systemId    the source's {@code IDENTIFY_SYSTEM} system identifier
 * @param database    the source database name
 * @param slot        the replication slot name
 * @param publication the publication name
 * @param destination the destination's name in the configuration
 */
public record Identity(String systemId, String database, String slot, String publication, String destination) {

    /** A sentence naming the first field that differs, or {@code null} when equal. */
    public String difference(Identity other) {
        if (!systemId.equals(other.systemId)) {
            return "source system identifier " + other.systemId + " (this source is " + systemId + ")";
        }
        if (!database.equals(other.database)) {
            return "database '" + other.database + "' (this pipeline reads '" + database + "')";
        }
        if (!slot.equals(other.slot)) {
            return "slot '" + other.slot + "' (this pipeline uses '" + slot + "')";
        }
        if (!publication.equals(other.publication)) {
            return "publication '" + other.publication + "' (this pipeline uses '" + publication + "')";
        }
        if (!destination.equals(other.destination)) {
            return "destination '" + other.destination + "' (this is '" + destination + "')";
        }
        return null;
    }
}
