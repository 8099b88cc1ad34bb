package rialto.compat;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * Client-library checks for the compat suite: {@code ClientChecks HOST PORT SCENARIO...} runs each
 * scenario against the server and prints one line per scenario, {@code OK} or {@code FAIL: reason}
 * (prefixed with {@code SCENARIO: } when more than one is given), exiting 1 if any failed.
 * {@code ClientChecks list} prints the scenario names, one a line; {@code all} as the only scenario
 * runs every one.
 *
 * <p>Every scenario expects an empty server (tests/compat/test_clients.py gives each one a fresh
 * server); when several are given, the server is FLUSHALLed before each, so point it at a
 * throwaway server only. A scenario still running after {@link #SCENARIO_TIMEOUT_S} seconds
 * fails, and the process exits.
 *
 * <p>{@code ClientChecks cluster ...} runs the cluster scenarios instead (see {@link ClusterChecks}).
 */
public final class ClientChecks {
    static final long SCENARIO_TIMEOUT_S = 10;
    /** How long to wait for one asynchronous event (a pub/sub message, a cache invalidation). */
    static final long EVENT_TIMEOUT_MS = 5000;

    @FunctionalInterface
    interface Scenario {
        void run(String host, int port) throws Exception;
    }

    static final Map<String, Scenario> SCENARIOS = new LinkedHashMap<>();

    static {
        JedisChecks.register(SCENARIOS);
        LettuceChecks.register(SCENARIOS);
    }

    public static void main(String[] args) {
        // Lettuce and Netty log through java.util.logging (Netty will not use SLF4J's no-op
        // binding): silence it, so that stdout and stderr carry only the verdicts.
        java.util.logging.LogManager.getLogManager().reset();
        java.util.logging.Logger.getLogger("").setLevel(java.util.logging.Level.OFF);
        if (args.length >= 1 && args[0].equals("cluster")) {
            ClusterChecks.main(java.util.Arrays.copyOfRange(args, 1, args.length));
            return;
        }
        if (args.length == 1 && args[0].equals("list")) {
            SCENARIOS.keySet().forEach(System.out::println);
            System.exit(0);
        }
        if (args.length < 3) {
            System.err.println("usage: ClientChecks HOST PORT SCENARIO... | ClientChecks list | ClientChecks cluster ...");
            System.exit(2);
        }
        String host = args[0];
        int port = Integer.parseInt(args[1]);
        List<String> names = new ArrayList<>(List.of(args).subList(2, args.length));
        if (names.equals(List.of("all"))) {
            names = new ArrayList<>(SCENARIOS.keySet());
        }
        boolean several = names.size() > 1;
        boolean allOk = true;
        for (String name : names) {
            if (several) {
                flushAll(host, port);
            }
            String verdict = runOne(name, host, port);
            System.out.println((several ? name + ": " : "") + verdict);
            System.out.flush();
            allOk &= verdict.equals("OK");
        }
        // Client libraries leave non-daemon threads (Netty event loops, pools) behind.
        System.exit(allOk ? 0 : 1);
    }

    static void flushAll(String host, int port) {
        try (redis.clients.jedis.Jedis j = new redis.clients.jedis.Jedis(host, port, 5000)) {
            j.flushAll();
            j.scriptFlush();
        } catch (RuntimeException e) {
            // best effort: a server without SCRIPT fails the scripting scenarios by itself
        }
    }

    static String runOne(String name, String host, int port) {
        Scenario s = SCENARIOS.get(name);
        if (s == null) {
            return "FAIL: unknown scenario " + name + " (see `list`)";
        }
        return runWithTimeout(name, s, host, port, SCENARIO_TIMEOUT_S);
    }

    /** Runs `s` on a thread: its verdict, or a FAIL line and the process's exit after `timeoutS` seconds. */
    static String runWithTimeout(String name, Scenario s, String host, int port, long timeoutS) {
        String[] verdict = new String[1];
        Thread t = new Thread(() -> {
            try {
                s.run(host, port);
                verdict[0] = "OK";
            } catch (Throwable e) {
                verdict[0] = "FAIL: " + describe(e);
            }
        }, "scenario-" + name);
        t.setDaemon(true);
        t.start();
        try {
            t.join(TimeUnit.SECONDS.toMillis(timeoutS));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (t.isAlive()) {
            StringBuilder where = new StringBuilder();
            for (StackTraceElement el : t.getStackTrace()) {
                if (el.getClassName().startsWith("rialto.compat.")) {
                    where.append(" at ").append(el.getClassName().replace("rialto.compat.", ""))
                            .append(':').append(el.getLineNumber());
                    break;
                }
            }
            System.out.println("FAIL: timed out after " + timeoutS + "s" + where);
            System.out.flush();
            Runtime.getRuntime().halt(1);
        }
        return verdict[0];
    }

    /** One line: exception class and message, causes appended, plus where in the checks it happened. */
    static String describe(Throwable e) {
        while ((e instanceof ExecutionException || e.getClass().getName().endsWith("UndeclaredThrowableException"))
                && e.getCause() != null) {
            e = e.getCause();
        }
        StringBuilder sb = new StringBuilder();
        if (e instanceof CheckFailed) {
            sb.append(e.getMessage());
        } else {
            sb.append(e.getClass().getSimpleName()).append(": ").append(e.getMessage());
            Throwable c = e.getCause();
            for (int i = 0; c != null && c != e && i < 3; i++, c = c.getCause()) {
                if (Objects.equals(c.getMessage(), e.getMessage())) {
                    continue; // Lettuce wraps the server's error in an exception with the same text
                }
                sb.append(" <- ").append(c.getClass().getSimpleName()).append(": ").append(c.getMessage());
            }
        }
        for (StackTraceElement el : e.getStackTrace()) {
            if (el.getClassName().startsWith("rialto.compat.") && !el.getClassName().endsWith("ClientChecks")) {
                sb.append(" [").append(el.getFileName()).append(':').append(el.getLineNumber()).append(']');
                break;
            }
        }
        return sb.toString().replace('\n', ' ').replace('\r', ' ');
    }

    // --- assertions -------------------------------------------------------------------------

    static final class CheckFailed extends RuntimeException {
        CheckFailed(String message) {
            super(message);
        }
    }

    static void check(boolean ok, String what) {
        if (!ok) {
            throw new CheckFailed(what);
        }
    }

    static void eq(Object want, Object got, String what) {
        if (!Objects.equals(normalize(want), normalize(got))) {
            throw new CheckFailed(what + ": expected " + show(want) + ", got " + show(got));
        }
    }

    /** byte[] compares by content; lists element-wise. */
    private static Object normalize(Object o) {
        if (o instanceof byte[]) {
            return new String((byte[]) o, StandardCharsets.UTF_8);
        }
        if (o instanceof List) {
            List<Object> out = new ArrayList<>();
            for (Object x : (List<?>) o) {
                out.add(normalize(x));
            }
            return out;
        }
        return o;
    }

    static String show(Object o) {
        Object n = normalize(o);
        if (n == null) {
            return "null";
        }
        if (n instanceof String) {
            return "\"" + n + "\" (String)";
        }
        return n + " (" + n.getClass().getSimpleName() + ")";
    }

    /** Runs `body`, which must throw an exception whose message contains `fragment`; returns the message. */
    static String expectError(String what, String fragment, ThrowingRunnable body) {
        try {
            body.run();
        } catch (Throwable e) {
            String msg = String.valueOf(e.getMessage());
            check(msg.contains(fragment), what + ": expected an error containing \"" + fragment + "\", got "
                    + e.getClass().getSimpleName() + ": " + msg);
            return msg;
        }
        throw new CheckFailed(what + ": expected an error containing \"" + fragment + "\", but it succeeded");
    }

    @FunctionalInterface
    interface ThrowingRunnable {
        void run() throws Exception;
    }

    /** The next event from `q` must be `want` (waits up to EVENT_TIMEOUT_MS). */
    static void expectEvent(BlockingQueue<String> q, String want) throws InterruptedException {
        String got = q.poll(EVENT_TIMEOUT_MS, TimeUnit.MILLISECONDS);
        if (got == null) {
            throw new CheckFailed("waited " + EVENT_TIMEOUT_MS + "ms for pub/sub event \"" + want + "\", got nothing");
        }
        eq(want, got, "pub/sub event");
    }

    /** No further event arrives within `ms`. */
    static void expectNoEvent(BlockingQueue<String> q, long ms) throws InterruptedException {
        String got = q.poll(ms, TimeUnit.MILLISECONDS);
        check(got == null, "unexpected pub/sub event \"" + got + "\"");
    }

    static void waitFor(String what, BooleanSupplier cond) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(EVENT_TIMEOUT_MS);
        while (!cond.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new CheckFailed("waited " + EVENT_TIMEOUT_MS + "ms for " + what);
            }
            Thread.sleep(5);
        }
    }

    static String sha1Hex(String s) {
        try {
            byte[] d = MessageDigest.getInstance("SHA-1").digest(s.getBytes(StandardCharsets.UTF_8));
            StringBuilder sb = new StringBuilder();
            for (byte b : d) {
                sb.append(String.format("%02x", b));
            }
            return sb.toString();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private ClientChecks() {}
}
