package io.millrace.engine.faults;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Test support: a TCP proxy on loopback between the engine and PostgreSQL that can cut every connection
 * (both sides closed, as a network drop the kernel reports) or stall them (bytes held, sockets open, as a
 * network that stops delivering). Two pump threads per connection.
 */
final class TcpProxy implements AutoCloseable {
    private final ServerSocket server;
    private final int targetPort;
    private final List<Socket[]> pairs = new CopyOnWriteArrayList<>();
    private final Object stallLock = new Object();
    // @GuardedBy("stallLock")
    private boolean stalled;
    private volatile boolean refusing;
    private volatile boolean closed;
    private final AtomicInteger accepted = new AtomicInteger();
    private final AtomicInteger cut = new AtomicInteger();

    TcpProxy(int targetPort) throws IOException {
        this.targetPort = targetPort;
        this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        Thread t = new Thread(this::acceptLoop, "proxy-accept");
        t.setDaemon(true);
        t.start();
    }

    int port() {
        return server.getLocalPort();
    }

    /** Connections accepted so far. */
    int accepted() {
        return accepted.get();
    }

    /** Connections cut so far. */
    int cutCount() {
        return cut.get();
    }

    /** Closes every open connection, both sides; new ones are accepted again (unless refusing). */
    void cutAll() {
        for (Socket[] p : pairs) {
            closeQuietly(p[0]);
            closeQuietly(p[1]);
            pairs.remove(p);
            cut.incrementAndGet();
        }
    }

    /** While refusing, new connections are closed at once (as a host that is down answers with RST/EOF). */
    void refuse(boolean on) {
        refusing = on;
    }

    private final java.util.Set<Socket[]> blackholed = java.util.concurrent.ConcurrentHashMap.newKeySet();

    /**
     * The connections open now lose every byte from here on, in both directions, and never close (not even when one
     * end closes): a middlebox that forgot them. New connections work.
     */
    void blackholeExisting() {
        blackholed.addAll(pairs);
    }

    private final java.util.Set<Socket[]> cutMidway = java.util.concurrent.ConcurrentHashMap.newKeySet();

    /**
     * As {@link #blackholeExisting}, but the next bytes from the server are passed on all but the last one first: the
     * client is left with part of a message (a frame the server wrote whole ends one byte short), and then nothing.
     */
    void blackholeExistingMidMessage() {
        cutMidway.addAll(pairs);
    }

    /** Holds (true) or releases (false) every byte in both directions; sockets stay open. */
    void stall(boolean on) {
        synchronized (stallLock) {
            stalled = on;
            stallLock.notifyAll();
        }
    }

    private void acceptLoop() {
        while (!closed) {
            try {
                Socket client = server.accept();
                if (refusing) {
                    closeQuietly(client);
                    continue;
                }
                Socket upstream = new Socket();
                upstream.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), targetPort), 5_000);
                client.setTcpNoDelay(true);
                upstream.setTcpNoDelay(true);
                Socket[] pair = {client, upstream};
                pairs.add(pair);
                accepted.incrementAndGet();
                pump(client, upstream, pair, "proxy-up");
                pump(upstream, client, pair, "proxy-down");
            } catch (IOException e) {
                if (closed) {
                    return;
                }
            }
        }
    }

    private void pump(Socket from, Socket to, Socket[] pair, String name) {
        Thread t = new Thread(() -> {
            byte[] buf = new byte[64 * 1024];
            try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
                int n;
                while ((n = in.read(buf)) >= 0) {
                    if (blackholed.contains(pair)) {
                        continue; // lost on the way
                    }
                    if (n > 1 && from == pair[1] && cutMidway.remove(pair)) {
                        out.write(buf, 0, n - 1); // the server's last frame in this read arrives one byte short
                        out.flush();
                        blackholed.add(pair);
                        continue;
                    }
                    synchronized (stallLock) {
                        while (stalled && !from.isClosed()) {
                            stallLock.wait(100);
                        }
                    }
                    out.write(buf, 0, n);
                    out.flush();
                }
            } catch (IOException | InterruptedException e) {
                // cut, or the other side closed
            } finally {
                if (!blackholed.contains(pair)) {
                    closeQuietly(from);
                    closeQuietly(to);
                    pairs.remove(pair);
                }
            }
        }, name);
        t.setDaemon(true);
        t.start();
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException ignored) {
            // closing anyway
        }
    }

    @Override
    public void close() {
        closed = true;
        stall(false);
        try {
            server.close();
        } catch (IOException ignored) {
            // closing anyway
        }
        cutAll();
    }
}
