package io.millrace.core.sink;

import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.ServiceLoader;

/**
 * The {@link DestinationProvider}s on a class path, found once with {@link ServiceLoader}, by type and alias.
 * Immutable; any thread.
 */
public final class DestinationProviders {
    /** The built-in types in the order messages list them; providers found beyond them follow by name. */
    private static final List<String> BUILT_IN = List.of("postgres", "jsonl", "duckdb", "kafka", "discard");

    private final Map<String, DestinationProvider> byName;
    private final List<String> types;

    private DestinationProviders(List<DestinationProvider> providers) {
        Map<String, DestinationProvider> names = new LinkedHashMap<>();
        List<String> found = new ArrayList<>();
        for (DestinationProvider p : providers) {
            found.add(p.type());
            for (String n : names(p)) {
                DestinationProvider other = names.putIfAbsent(n, p);
                if (other != null) {
                    throw new MillraceException(Kind.CONFIG, "destination type '" + n + "' is provided twice on the class path, by "
                            + other.getClass().getName() + " and " + p.getClass().getName() + ": remove one of the jars");
                }
            }
        }
        found.sort(Comparator.comparingInt((String t) -> BUILT_IN.contains(t) ? BUILT_IN.indexOf(t) : BUILT_IN.size())
                .thenComparing(Comparator.naturalOrder()));
        this.byName = Map.copyOf(names);
        this.types = List.copyOf(found);
    }

    private static List<String> names(DestinationProvider p) {
        List<String> out = new ArrayList<>();
        out.add(p.type());
        out.addAll(p.aliases());
        return out;
    }

    /** The providers {@code loader} sees in {@code META-INF/services/io.millrace.core.sink.DestinationProvider}. */
    public static DestinationProviders load(ClassLoader loader) {
        List<DestinationProvider> found = new ArrayList<>();
        ServiceLoader.load(DestinationProvider.class, loader).forEach(found::add);
        return new DestinationProviders(found);
    }

    /** The providers of the thread's context class loader (or this class's, when it has none). */
    public static DestinationProviders installed() {
        ClassLoader cl = Thread.currentThread().getContextClassLoader();
        return load(cl != null ? cl : DestinationProviders.class.getClassLoader());
    }

    /** Exactly these providers (e.g. a test's, or an application that does not want class path discovery). */
    public static DestinationProviders of(List<DestinationProvider> providers) {
        return new DestinationProviders(providers);
    }

    /** The provider whose {@link DestinationProvider#type() type} or one of whose aliases is {@code type}. */
    public Optional<DestinationProvider> find(String type) {
        return Optional.ofNullable(byName.get(type));
    }

    /** Every provider's type: the built-in ones first (postgres, jsonl, duckdb, kafka, discard), then the others by name. */
    public List<String> types() {
        return types;
    }
}
