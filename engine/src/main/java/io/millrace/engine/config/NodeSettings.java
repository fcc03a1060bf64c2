package io.millrace.engine.config;

import io.millrace.core.MillraceException;
import io.millrace.core.Secret;
import io.millrace.core.sink.DestinationSettings;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.function.BiFunction;
import java.util.stream.Stream;

/** One destination's YAML mapping as a provider reads it: a {@link Node}, the file's folder and the loader's secrets. */
final class NodeSettings implements DestinationSettings {
    private final Node node;
    private final Path base;
    private final BiFunction<Node, String, Secret> secrets;

    NodeSettings(Node node, Path base, BiFunction<Node, String, Secret> secrets) {
        this.node = node;
        this.base = base;
        this.secrets = secrets;
    }

    @Override
    public String key(String key) {
        return node.key(key);
    }

    @Override
    public boolean has(String key) {
        return node.has(key);
    }

    @Override
    public String string(String key, String dflt) {
        return node.string(key, dflt);
    }

    @Override
    public String requireString(String key, String example) {
        return node.requireString(key, example);
    }

    @Override
    public int integer(String key, int dflt, int min, int max) {
        return node.integer(key, dflt, min, max);
    }

    @Override
    public boolean bool(String key, boolean dflt) {
        return node.bool(key, dflt);
    }

    @Override
    public List<String> strings(String key) {
        return node.strings(key);
    }

    @Override
    public <E extends Enum<E>> E choice(String key, E dflt, Class<E> type) {
        return node.choice(key, dflt, type);
    }

    @Override
    public Map<String, String> stringMap(String key) {
        return node.stringMap(key);
    }

    @Override
    public Path path(String key, String dflt) {
        String s = node.string(key, dflt);
        return s == null ? null : base.resolve(s);
    }

    @Override
    public Secret secret(String prefix) {
        return secrets.apply(node, prefix);
    }

    @Override
    public void allow(String... keys) {
        node.allow(Stream.concat(Stream.of("name", "type"), Stream.of(keys)).toArray(String[]::new));
    }

    @Override
    public MillraceException error(String key, String message) {
        return Node.error(node.key(key), message);
    }
}
