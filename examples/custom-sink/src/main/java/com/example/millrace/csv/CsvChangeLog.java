package com.example.millrace.csv;

import io.millrace.core.Lsn;
import io.millrace.core.Position;
import io.millrace.core.schema.TableRef;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Reads a csv destination's change log back as a reader may rely on it while the engine writes: the files its state
 * file names, in the order begun, each up to the length the state file gives (lines beyond may be cut after a crash
 * and come again). Any thread; reads files only.
 */
public final class CsvChangeLog {
    private CsvChangeLog() {
    }

    /**
     * One line of the log.
     *
     * @param op  {@code r}, {@code c}, {@code u}, {@code d} or {@code t}
     * @param row the file's columns and their values ({@code null} for NULL; {@value CsvSink#UNCHANGED} for an unchanged
     *            TOAST value); empty for a truncate
     */
    public record Change(TableRef table, Position position, String op, Map<String, String> row) {
    }

    /** Every change the state file of {@code directory} covers; none when it has none yet. */
    public static List<Change> read(Path directory) throws IOException {
        List<Change> out = new ArrayList<>();
        if (!Files.exists(directory.resolve(CsvState.NAME))) {
            return out;
        }
        for (CsvState.FileEntry f : CsvState.read(directory).files()) {
            byte[] bytes = Files.readAllBytes(directory.resolve(f.file()));
            List<List<String>> records = parse(new String(bytes, 0, (int) f.length(), StandardCharsets.UTF_8));
            List<String> header = records.get(0);
            for (List<String> r : records.subList(1, records.size())) {
                Map<String, String> row = new LinkedHashMap<>();
                for (int i = 3; i < r.size(); i++) {
                    row.put(header.get(i), r.get(i));
                }
                out.add(new Change(f.table(), new Position(Lsn.parse(r.get(0)), Long.parseLong(r.get(1))), r.get(2), row));
            }
        }
        return out;
    }

    /** RFC 4180 records of whole lines; an empty unquoted field is null (SQL NULL), a quoted empty one the empty string. */
    static List<List<String>> parse(String text) {
        List<List<String>> records = new ArrayList<>();
        List<String> record = new ArrayList<>();
        StringBuilder field = new StringBuilder();
        boolean quoted = false;
        boolean wasQuoted = false;
        for (int i = 0; i < text.length(); i++) {
            char ch = text.charAt(i);
            if (quoted) {
                if (ch == '"' && i + 1 < text.length() && text.charAt(i + 1) == '"') {
                    field.append('"');
                    i++;
                } else if (ch == '"') {
                    quoted = false;
                } else {
                    field.append(ch);
                }
            } else if (ch == '"') {
                quoted = true;
                wasQuoted = true;
            } else if (ch == ',' || ch == '\n') {
                record.add(field.length() == 0 && !wasQuoted ? null : field.toString());
                field.setLength(0);
                wasQuoted = false;
                if (ch == '\n') {
                    records.add(record);
                    record = new ArrayList<>();
                }
            } else {
                field.append(ch);
            }
        }
        if (!record.isEmpty() || field.length() > 0) {
            throw new IllegalStateException("a csv change log ends inside a line: the state file covers whole lines only");
        }
        return records;
    }
}
