package io.millrace.sink.kafka;

import io.millrace.core.schema.TableRef;

/** Topic names: the configured format filled in, with characters Kafka refuses replaced as Debezium does. */
final class Topics {
    private static final int MAX_LENGTH = 249;

    private Topics() {
    }

    /** {@code format} with {@code {prefix}}, {@code {schema}}, {@code {table}} filled in; invalid characters become '_'. */
    static String name(String format, String prefix, TableRef table) {
        String raw = format.replace("{prefix}", prefix).replace("{schema}", table.schema()).replace("{table}", table.table());
        StringBuilder sb = new StringBuilder(raw.length());
        for (int i = 0; i < raw.length(); i++) {
            char c = raw.charAt(i);
            sb.append(allowed(c) ? c : '_'); // Debezium's TopicNamingStrategy replaces the same characters
        }
        return sb.toString();
    }

    static boolean valid(String topic) {
        if (topic.isEmpty() || topic.length() > MAX_LENGTH || topic.equals(".") || topic.equals("..")) {
            return false;
        }
        for (int i = 0; i < topic.length(); i++) {
            if (!allowed(topic.charAt(i))) {
                return false;
            }
        }
        return true;
    }

    private static boolean allowed(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    }
}
