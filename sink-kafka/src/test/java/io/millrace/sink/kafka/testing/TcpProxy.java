package io.millrace.sink.kafka.testing;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Test support: a TCP proxy from a loopback port to another. {@link #cut()} drops every connection and refuses new ones
 * (connection refused, as from a host that went away) until {@link #restore()}. Test thread for cut and restore.
 */
final class TcpProxy implements AutoCloseable {
    private final int port;
    private final int target;
    private final Set<Socket> open = ConcurrentHashMap.newKeySet();
    private volatile ServerSocket server;

    TcpProxy(int port, int target) {
        this.port = port;
        this.target = target;
    }

    int port() {
        return port;
    }

    /** Listens (again) and forwards every connection to the target. */
    void restore() throws IOException {
        ServerSocket s = new ServerSocket();
        s.setReuseAddress(true);
        s.bind(new InetSocketAddress("127.0.0.1", port));
        server = s;
        Thread accept = new Thread(() -> accept(s), "tcp-proxy-" + port);
        accept.setDaemon(true);
        accept.start();
    }

    /** Stops listening and drops every connection. */
    void cut() throws IOException {
        ServerSocket s = server;
        server = null;
        if (s != null) {
            s.close();
        }
        for (Socket c : open) {
            close(c);
        }
    }

    @Override
    public void close() throws IOException {
        cut();
    }

    private void accept(ServerSocket s) {
        while (!s.isClosed()) {
            try {
                Socket client = s.accept();
                Socket upstream;
                try {
                    upstream = new Socket("127.0.0.1", target);
                } catch (IOException e) {
                    close(client);
                    continue;
                }
                open.add(client);
                open.add(upstream);
                if (server != s) { // cut meanwhile
                    close(client);
                    close(upstream);
                    continue;
                }
                pump(client, upstream);
                pump(upstream, client);
            } catch (IOException e) {
                // closed by cut()
            }
        }
    }

    private void pump(Socket from, Socket to) {
        Thread t = new Thread(() -> {
            byte[] buf = new byte[64 * 1024];
            try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
                int n;
                while ((n = in.read(buf)) >= 0) {
                    out.write(buf, 0, n);
                    out.flush();
                }
            } catch (IOException e) {
                // the other side or cut() closed it
            } finally {
                close(from);
                close(to);
            }
        }, "tcp-proxy-pump-" + port);
        t.setDaemon(true);
        t.start();
    }

    private void close(Socket s) {
        open.remove(s);
        try {
            s.close();
        } catch (IOException e) {
            // closing
        }
    }
}
