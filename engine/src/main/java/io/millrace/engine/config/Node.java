package io.millrace.engine.config;

import com.fasterxml.jackson.databind.JsonNode;
import io.millrace.core.MillraceException;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * A YAML mapping being read, with its path for messages. Every read marks the key as known;
 * {@link #done()} then rejects any key nobody asked for, suggesting the nearest known one. Values
 * of the wrong form are errors naming the key and the expected form — never a silent default.
 */
final class Node {
    private final JsonNode node;
    private final String path;
    private final Set<String> known = new LinkedHashSet<>();

    Node(JsonNode node, String path) {
        this.node = node;
        this.path = path;
        if (node != null && !node.isNull() && !node.isObject()) {
            throw error(path.isEmpty() ? "the configuration" : path, "must be a mapping of keys to values");
        }
    }

    static MillraceException error(String key, String message) {
        return Limit.error(key, message);
    }

    String key(String name) {
        return path.isEmpty() ? name : path + "." + name;
    }

    boolean has(String name) {
        known.add(name);
        return node != null && node.has(name) && !node.get(name).isNull();
    }

    private JsonNode get(String name) {
        known.add(name);
        return node == null ? null : node.get(name);
    }

    String string(String name, String dflt) {
        JsonNode v = get(name);
        if (v == null || v.isNull()) {
            return dflt;
        }
        if (!v.isValueNode() || v.isBoolean()) {
            throw error(key(name), "must be a string, got " + describe(v));
        }
        String s = v.asText();
        if (s.isBlank()) {
            throw error(key(name), "must not be empty");
        }
        return s;
    }

    String requireString(String name, String example) {
        String s = string(name, null);
        if (s == null) {
            throw error(key(name), "is required (e.g. " + name + ": " + example + ")");
        }
        return s;
    }

    int integer(String name, int dflt, int min, int max) {
        JsonNode v = get(name);
        if (v == null || v.isNull()) {
            return dflt;
        }
        if (!v.canConvertToInt() || !v.isIntegralNumber()) {
            throw error(key(name), "must be a whole number from " + min + " to " + max + ", got " + describe(v));
        }
        int i = v.asInt();
        if (i < min || i > max) {
            throw error(key(name), "must be from " + min + " to " + max + ", got " + i);
        }
        return i;
    }

    /**
     * A whole number, or null when absent; only its form is checked here (the error names {@code limit}'s bounds),
     * its bounds by the builder it is handed to.
     */
    Integer integer(String name, Limit limit) {
        JsonNode v = get(name);
        if (v == null || v.isNull()) {
            return null;
        }
        if (!v.canConvertToInt() || !v.isIntegralNumber()) {
            throw error(key(name), "must be a whole number from " + limit.min() + " to " + limit.max() + ", got " + describe(v));
        }
        return v.asInt();
    }

    boolean bool(String name, boolean dflt) {
        JsonNode v = get(name);
        if (v == null || v.isNull()) {
            return dflt;
        }
        if (!v.isBoolean()) {
            throw error(key(name), "must be true or false, got " + describe(v));
        }
        return v.asBoolean();
    }

    <E extends Enum<E>> E choice(String name, E dflt, Class<E> type) {
        JsonNode v = get(name);
        if (v != null && v.isBoolean()) {
            // YAML 1.1 reads an unquoted on/off (also yes/no, true/false) as a boolean: for a choice
            // that has the words on and off (source.binary: auto | on | off) take it as that word.
            String word = v.booleanValue() ? "ON" : "OFF";
            for (E e : type.getEnumConstants()) {
                if (e.name().equals(word)) {
                    return e;
                }
            }
        }
        String s = string(name, null);
        if (s == null) {
            return dflt;
        }
        for (E e : type.getEnumConstants()) {
            if (e.name().equalsIgnoreCase(s.replace('-', '_'))) {
                return e;
            }
        }
        List<String> names = new ArrayList<>();
        for (E e : type.getEnumConstants()) {
            names.add(e.name().toLowerCase(java.util.Locale.ROOT));
        }
        throw error(key(name), "must be one of " + String.join(", ", names) + ", got '" + s + "'");
    }

    List<String> strings(String name) {
        JsonNode v = get(name);
        List<String> out = new ArrayList<>();
        if (v == null || v.isNull()) {
            return out;
        }
        if (!v.isArray()) {
            throw error(key(name), "must be a list, e.g. [public.orders, public.customers], got " + describe(v));
        }
        for (JsonNode e : v) {
            if (!e.isTextual() || e.asText().isBlank()) {
                throw error(key(name), "must hold non-empty strings, got " + describe(e));
            }
            out.add(e.asText());
        }
        return out;
    }

    /** A mapping of settings passed through as text (e.g. Kafka producer properties); scalars only. */
    java.util.Map<String, String> stringMap(String name) {
        JsonNode v = get(name);
        java.util.Map<String, String> out = new java.util.LinkedHashMap<>();
        if (v == null || v.isNull()) {
            return out;
        }
        if (!v.isObject()) {
            throw error(key(name), "must be a mapping of settings to values, e.g. {compression.type: zstd}, got " + describe(v));
        }
        Iterator<java.util.Map.Entry<String, JsonNode>> it = v.fields();
        while (it.hasNext()) {
            java.util.Map.Entry<String, JsonNode> e = it.next();
            if (!e.getValue().isValueNode() || e.getValue().isNull()) {
                throw error(key(name) + "." + e.getKey(), "must be a single value, got " + describe(e.getValue()));
            }
            out.put(e.getKey(), e.getValue().asText());
        }
        return out;
    }

    Node child(String name) {
        return new Node(get(name), key(name));
    }

    List<Node> children(String name) {
        JsonNode v = get(name);
        List<Node> out = new ArrayList<>();
        if (v == null || v.isNull()) {
            return out;
        }
        if (!v.isArray()) {
            throw error(key(name), "must be a list of mappings, got " + describe(v));
        }
        for (int i = 0; i < v.size(); i++) {
            out.add(new Node(v.get(i), key(name) + "[" + i + "]"));
        }
        return out;
    }

    /**
     * Rejects, before anything is read, a key that is not among {@code keys}, suggesting the nearest.
     * Call it first in a mapping whose required settings are checked while reading: a misspelt key
     * ({@code sorce}, {@code databse}) is then reported as such, not as a missing required setting.
     */
    void allow(String... keys) {
        if (node == null) {
            return;
        }
        List<String> allowed = List.of(keys);
        Iterator<String> it = node.fieldNames();
        while (it.hasNext()) {
            String k = it.next();
            if (!allowed.contains(k)) {
                throw unknown(k, allowed);
            }
        }
    }

    /**
     * When {@code name} is absent, refuses a key that looks like a misspelling of it, naming {@code known} as the keys
     * known so far (e.g. {@code tpye} before a destination's type says which keys it has).
     */
    void refuseMisspelling(String name, String... known) {
        if (node == null || has(name)) {
            return;
        }
        Iterator<String> it = node.fieldNames();
        while (it.hasNext()) {
            String k = it.next();
            if (!List.of(known).contains(k) && nearest(k, List.of(name)) != null) {
                throw unknown(k, List.of(known));
            }
        }
    }

    private MillraceException unknown(String k, java.util.Collection<String> candidates) {
        String near = nearest(k, candidates);
        return error(key(k), "is not a known setting" + (near == null ? "" : "; did you mean '" + near + "'?")
                + " (known here: " + String.join(", ", candidates) + ")");
    }

    /** Rejects every key that was not read. */
    void done() {
        if (node == null) {
            return;
        }
        Iterator<String> it = node.fieldNames();
        while (it.hasNext()) {
            String k = it.next();
            if (!known.contains(k)) {
                throw unknown(k, known);
            }
        }
    }

    private static String nearest(String k, java.util.Collection<String> candidates) {
        String best = null;
        int bestD = Integer.MAX_VALUE;
        for (String c : candidates) {
            int d = distance(k.toLowerCase(java.util.Locale.ROOT), c);
            if (d < bestD) {
                bestD = d;
                best = c;
            }
        }
        return bestD <= Math.max(2, k.length() / 3) ? best : null;
    }

    private static int distance(String a, String b) {
        int[] prev = new int[b.length() + 1];
        int[] cur = new int[b.length() + 1];
        for (int j = 0; j <= b.length(); j++) {
            prev[j] = j;
        }
        for (int i = 1; i <= a.length(); i++) {
            cur[0] = i;
            for (int j = 1; j <= b.length(); j++) {
                cur[j] = Math.min(Math.min(cur[j - 1] + 1, prev[j] + 1), prev[j - 1] + (a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1));
            }
            int[] t = prev;
            prev = cur;
            cur = t;
        }
        return prev[b.length()];
    }

    private static String describe(JsonNode v) {
        if (v.isTextual()) {
            return "'" + v.asText() + "'";
        }
        if (v.isObject()) {
            return "a mapping";
        }
        if (v.isArray()) {
            return "a list";
        }
        return v.toString();
    }
}
