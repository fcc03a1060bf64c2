package io.millrace.core.transform;

import io.millrace.core.schema.TableRef;

/**
 * User code that transforms a column's values before any destination sees them: a mask of one's own (tokenising,
 * format-preserving masking, a lookup). Found with {@link java.util.ServiceLoader}, as destinations are: list the class
 * in {@code META-INF/services/io.millrace.core.transform.Transform} of a jar on the class path
 * ({@code MILLRACE_CLASSPATH}), and name it in a table's masks: {@code mask: {email: java(tokenize)}}.
 *
 * <p>It runs for the initial snapshot, online snapshots and the stream alike, on each destination's writer thread (so
 * possibly on several threads at once: be thread-safe), for {@code before} and {@code after} images alike, and must
 * give the same output for the same input every time (a row's old and new images must mask alike). The column reaches
 * destinations as {@code text}. A key column cannot be given to a Transform (Millrace cannot know that it keeps keys
 * apart): mask it with {@code hash}.
 */
public interface Transform {

    /** The name a configuration gives in {@code java(<name>)}: letters, digits, '-', '_' and '.'. */
    String name();

    /**
     * The value destinations get for one column of one row, or null for SQL NULL. Never called for NULL, nor for an
     * unchanged TOASTed value (destinations keep what they hold).
     *
     * @param table  the source table
     * @param column the column's name
     * @param text   the value's text form (PostgreSQL's input form of it; for text types, the value itself)
     * @throws RuntimeException to stop the pipeline (the error names the transform, the table and the column, never the value)
     */
    String apply(TableRef table, String column, String text);
}
