package io.millrace.core.event;

/**
 * What a change event says about where it came from, besides the event itself.
 *
 * @param name     the logical server name (Debezium's {@code topic.prefix}): {@code source.name} of every
 *                 event, and the topic prefix where a destination has topics
 * @param database the source database name: {@code source.db} of every event
 */
public record SourceMeta(String name, String database) {
    public SourceMeta {
        if (name == null || name.isEmpty()) {
            throw new IllegalArgumentException("source name (logical server name / topic prefix) must not be empty");
        }
        if (database == null || database.isEmpty()) {
            throw new IllegalArgumentException("source database name must not be empty");
        }
    }
}
