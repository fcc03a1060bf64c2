package io.millrace.core.schema;

/**
 * One column of a relation as the stream (pgoutput Relation message) or the catalog describes it.
 *
 * @param name     the column name
 * @param type     the column's type (a domain stays a domain here; codecs look through it)
 * @param typeMod  {@code atttypmod}, -1 when none
 * @param key      part of the replica identity (primary key or replica identity index)
 */
public record ColumnInfo(String name, TypeInfo type, int typeMod, boolean key) {
}
