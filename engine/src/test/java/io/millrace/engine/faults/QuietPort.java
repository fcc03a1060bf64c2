package io.millrace.engine.faults;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.util.Random;

/**
 * Ports for servers a test stops and starts again on the same port: above the ephemeral range (61000-64999), so no
 * client connection takes one while its server is down. The integration tests run in two JVMs at once (failsafe's
 * forks, {@code millrace.it.forks}): each fork picks from its own half, so the other cannot take a port whose server is
 * down for a restart ({@code millrace.fork}, failsafe's fork number).
 */
final class QuietPort {
    private QuietPort() {
    }

    /** A free port of this fork's range, other than {@code not}. */
    static int pick(int not) throws IOException {
        int fork = Math.max(1, Integer.getInteger("millrace.fork", 1));
        int base = 61_000 + ((fork - 1) % 2) * 2_000;
        Random rnd = new Random();
        for (int i = 0; i < 200; i++) {
            int port = base + rnd.nextInt(2_000);
            if (port == not) {
                continue;
            }
            try (ServerSocket s = new ServerSocket()) {
                s.bind(new InetSocketAddress("127.0.0.1", port));
                return port;
            } catch (IOException taken) {
                // try another
            }
        }
        throw new IOException("no free port in " + base + "-" + (base + 1_999));
    }
}
