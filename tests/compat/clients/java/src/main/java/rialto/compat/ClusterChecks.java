package rialto.compat;

import static rialto.compat.ClientChecks.check;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import java.util.function.Predicate;

import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.Protocol;
import redis.clients.jedis.util.JedisClusterCRC16;

/**
 * Cluster scenarios: {@code ClientChecks cluster HOST PORT SCENARIO} runs one against the cluster
 * that HOST:PORT belongs to (the only address the client is given), {@code ClientChecks cluster
 * list} prints their names. The last line printed is {@code OK} or {@code FAIL: reason}; a failover
 * scenario prints {@code ready} once its writes flow, then waits for a {@code killed} line on
 * stdin (the harness has killed the master of its counter), and prints a {@code result} line
 * before the verdict.
 *
 * <p>Where reads land is checked on the servers, not taken from the client: every node process
 * counts the GETs it served ({@code cmdstat_get} in INFO commandstats), and one process serves
 * each slot range at exactly one address, as master or as replica. So for the keys of one range,
 * a GET counted by the process that masters the range was served by the master, and one counted by
 * another process was served by a replica. Addresses are grouped into processes by INFO's run_id.
 */
final class ClusterChecks {
    static final long SCENARIO_TIMEOUT_S = 100;
    /** How long replicas may take to apply a write, and topology changes to settle. */
    static final long SETTLE_MS = 10_000;

    static final Map<String, ClientChecks.Scenario> SCENARIOS = new LinkedHashMap<>();

    static {
        JedisClusterChecks.register(SCENARIOS);
        LettuceClusterChecks.register(SCENARIOS);
    }

    static void main(String[] args) {
        if (args.length == 1 && args[0].equals("list")) {
            SCENARIOS.keySet().forEach(System.out::println);
            System.exit(0);
        }
        if (args.length != 3) {
            System.err.println("usage: ClientChecks cluster HOST PORT SCENARIO | ClientChecks cluster list");
            System.exit(2);
        }
        ClientChecks.Scenario s = SCENARIOS.get(args[2]);
        String verdict;
        if (s == null) {
            verdict = "FAIL: unknown cluster scenario " + args[2] + " (see `cluster list`)";
        } else {
            verdict = ClientChecks.runWithTimeout(args[2], s, args[0], Integer.parseInt(args[1]), SCENARIO_TIMEOUT_S);
        }
        System.out.println(verdict);
        System.out.flush();
        System.exit(verdict.equals("OK") ? 0 : 1);
    }

    // --- the cluster as the servers describe it -------------------------------------------------

    /** One slot range of CLUSTER SLOTS: its master's and replicas' addresses ("host:port"). */
    record Range(int lo, int hi, String master, List<String> replicas) {
        boolean has(int slot) {
            return lo <= slot && slot <= hi;
        }

        List<String> addresses() {
            List<String> all = new ArrayList<>(List.of(master));
            all.addAll(replicas);
            return all;
        }
    }

    static Jedis plain(String addr) {
        return new Jedis(HostAndPort.from(addr), redis.clients.jedis.DefaultJedisClientConfig.builder()
                .connectionTimeoutMillis(5000).socketTimeoutMillis(5000).build());
    }

    static String addr(Object host, Object port) {
        return str(host) + ":" + port;
    }

    static String str(Object o) {
        return o instanceof byte[] ? new String((byte[]) o, StandardCharsets.UTF_8) : String.valueOf(o);
    }

    /** CLUSTER SLOTS of the node at `addr`, sorted by slot. */
    static List<Range> slots(String addr) {
        try (Jedis j = plain(addr)) {
            List<Range> out = new ArrayList<>();
            for (Object o : (List<?>) j.sendCommand(Protocol.Command.CLUSTER, "SLOTS")) {
                List<?> r = (List<?>) o;
                List<?> m = (List<?>) r.get(2);
                List<String> replicas = new ArrayList<>();
                for (Object x : r.subList(3, r.size())) {
                    replicas.add(addr(((List<?>) x).get(0), ((List<?>) x).get(1)));
                }
                out.add(new Range(((Long) r.get(0)).intValue(), ((Long) r.get(1)).intValue(),
                        addr(m.get(0), m.get(1)), replicas));
            }
            out.sort((a, b) -> Integer.compare(a.lo(), b.lo()));
            return out;
        }
    }

    /** The slot ranges once every slot is served and the nodes agree for a moment. */
    static List<Range> stableSlots(String seed) throws InterruptedException {
        AtomicReference<List<Range>> last = new AtomicReference<>();
        waitFor("a complete, settled CLUSTER SLOTS", () -> quietly(() -> {
            List<Range> a = slots(seed);
            Thread.sleep(200);
            last.set(slots(seed));
            return a.equals(last.get()) && covers(a) && a.stream().allMatch(r -> !r.replicas().isEmpty());
        }));
        return last.get();
    }

    static boolean covers(List<Range> ranges) {
        int next = 0;
        for (Range r : ranges) {
            if (r.lo() != next) {
                return false;
            }
            next = r.hi() + 1;
        }
        return next == 16384;
    }

    static Range rangeOf(List<Range> ranges, String key) {
        int slot = JedisClusterCRC16.getSlot(key);
        return ranges.stream().filter(r -> r.has(slot)).findFirst().orElseThrow();
    }

    /** `perRange` keys named PREFIX + n in each range, in range order. */
    static List<String> keysAcross(List<Range> ranges, String prefix, int perRange) {
        List<String> keys = new ArrayList<>();
        for (Range r : ranges) {
            int found = 0;
            for (int n = 0; found < perRange; n++) {
                if (r.has(JedisClusterCRC16.getSlot(prefix + n))) {
                    keys.add(prefix + n);
                    found++;
                }
            }
        }
        return keys;
    }

    static String infoField(String info, String field) {
        for (String line : info.split("\r?\n")) {
            if (line.startsWith(field + ":")) {
                return line.substring(field.length() + 1).trim();
            }
        }
        return null;
    }

    /** The node process behind each address: address -> run_id. */
    static Map<String, String> processes(List<Range> ranges) {
        Map<String, String> out = new HashMap<>();
        for (Range r : ranges) {
            for (String a : r.addresses()) {
                try (Jedis j = plain(a)) {
                    out.put(a, infoField(j.info("server"), "run_id"));
                }
            }
        }
        return out;
    }

    /** GET calls each process has served so far: run_id -> calls. */
    static Map<String, Long> getCalls(Map<String, String> processes) {
        Map<String, String> onePerProcess = new HashMap<>();
        processes.forEach((a, run) -> onePerProcess.putIfAbsent(run, a));
        Map<String, Long> out = new HashMap<>();
        onePerProcess.forEach((run, a) -> {
            try (Jedis j = plain(a)) {
                String stat = infoField(j.info("commandstats"), "cmdstat_get");
                long calls = 0;
                if (stat != null) {
                    for (String kv : stat.split(",")) {
                        if (kv.startsWith("calls=")) {
                            calls = Long.parseLong(kv.substring("calls=".length()));
                        }
                    }
                }
                out.put(run, calls);
            }
        });
        return out;
    }

    enum Route { MASTER, REPLICAS }

    @FunctionalInterface
    interface Read {
        String get(String key) throws Exception;
    }

    /**
     * Reads every key of `kv` through `read`, one slot range at a time, and checks on the servers
     * that each range's GETs were served where `route` says: all by the process that masters the
     * range (MASTER), or all by the others, its replicas (REPLICAS). The values must be the ones
     * written. A topology change during a range's reads (a rebalance) repeats that range.
     */
    static void checkReadsLand(String seed, Map<String, String> kv, Read read, Route route, String what)
            throws Exception {
        List<Range> ranges = stableSlots(seed);
        for (Range range : ranges) {
            List<String> keys = kv.keySet().stream().filter(k -> range.has(JedisClusterCRC16.getSlot(k))).toList();
            check(!keys.isEmpty(), what + ": no key in slots " + range.lo() + "-" + range.hi());
            for (int attempt = 1; ; attempt++) {
                List<Range> before = slots(seed);
                Map<String, String> procs = processes(before);
                Range r = before.stream().filter(x -> x.lo() == range.lo()).findFirst().orElse(null);
                if (r == null) {
                    check(attempt < 3, what + ": the slot ranges kept changing");
                    continue;
                }
                String masterProc = procs.get(r.master());
                Set<String> replicaProcs = new LinkedHashSet<>();
                r.replicas().forEach(a -> replicaProcs.add(procs.get(a)));
                check(!replicaProcs.contains(masterProc) && replicaProcs.size() == r.replicas().size(),
                        what + ": slots " + r.lo() + "-" + r.hi() + " are served twice by one process");
                Map<String, Long> c0 = getCalls(procs);
                for (String k : keys) {
                    ClientChecks.eq(kv.get(k), read.get(k), what + ": GET " + k);
                }
                Map<String, Long> c1 = getCalls(procs);
                if (!slots(seed).equals(before)) {
                    check(attempt < 3, what + ": the slot ranges kept changing");
                    continue;
                }
                long onMaster = c1.get(masterProc) - c0.get(masterProc);
                long onReplicas = 0;
                for (String p : replicaProcs) {
                    onReplicas += c1.get(p) - c0.get(p);
                }
                String where = what + ", slots " + r.lo() + "-" + r.hi() + " (master " + r.master() + ", replicas "
                        + r.replicas() + "): " + keys.size() + " GETs, served by the master " + onMaster
                        + ", by replicas " + onReplicas;
                if (route == Route.REPLICAS) {
                    check(onMaster == 0 && onReplicas == keys.size(), where + "; expected all by replicas");
                } else {
                    check(onMaster == keys.size() && onReplicas == 0, where + "; expected all by the master");
                }
                break;
            }
        }
    }

    interface Check {
        boolean ok() throws Exception;
    }

    /** A condition polled by waitFor: an exception counts as not yet. */
    static boolean quietly(Check c) {
        try {
            return c.ok();
        } catch (Exception e) {
            return false;
        }
    }

    static void waitFor(String what, BooleanSupplier cond) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(SETTLE_MS);
        while (!cond.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new ClientChecks.CheckFailed("waited " + SETTLE_MS + "ms for " + what);
            }
            Thread.sleep(20);
        }
    }

    // --- a master killed while the client INCRs one counter ---------------------------------------

    @FunctionalInterface
    interface Incr {
        long incr() throws Exception;
    }

    /** Writes acknowledged before the kill notice, and after it, that the scenario waits for. */
    static final int WRITES_BEFORE = 100;
    static final int WRITES_AFTER = 100;
    /** How long writes may stay unavailable after the kill. */
    static final long RECOVERY_S = 40;

    /**
     * INCRs a counter that starts at 0 until the harness has killed its master (it prints {@code
     * ready}, then reads {@code killed} on stdin) and WRITES_AFTER more writes are acknowledged.
     * Every reply must be higher than the one before it (a lost write would make the counter go
     * back); the final value, read from the master, must count every acknowledged write and at most
     * the failed ones whose outcome is unknown. `refused(e)` tells a failure that certainly did not
     * write (the server's error reply, such as MOVED or TRYAGAIN, or a command never sent for want
     * of a connection) from an ambiguous one (the connection dropped with the command in flight, a
     * timeout): the client must surface every failure instead of sending the write again by itself,
     * or the count could not be bounded.
     */
    static void failover(Incr incr, Read finalRead, String key, Predicate<Throwable> refused) throws Exception {
        AtomicLong killedAt = new AtomicLong();
        Thread stdin = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                for (String line; (line = in.readLine()) != null; ) {
                    if (line.trim().equals("killed")) {
                        killedAt.set(System.nanoTime());
                    }
                }
            } catch (Exception ignored) {
                // the harness went away: the scenario's deadlines end it
            }
        }, "stdin");
        stdin.setDaemon(true);
        stdin.start();

        long acked = 0, ambiguous = 0, refusals = 0, last = 0, ackedAfter = 0;
        long readyAt = 0;
        Map<String, Integer> errors = new LinkedHashMap<>();
        while (true) {
            long killed = killedAt.get();
            try {
                long v = incr.incr();
                check(v > last, "INCR " + key + " answered " + v + " after an acknowledged " + last
                        + ": an acknowledged write was lost");
                last = v;
                acked++;
                if (killed != 0) {
                    ackedAfter++;
                }
            } catch (ClientChecks.CheckFailed e) {
                throw e;
            } catch (Exception e) {
                if (refused.test(e)) {
                    refusals++;
                } else {
                    ambiguous++;
                }
                errors.merge(ClientChecks.describe(e), 1, Integer::sum);
                Thread.sleep(20);
            }
            if (readyAt == 0 && acked >= WRITES_BEFORE) {
                readyAt = System.nanoTime();
                System.out.println("ready");
                System.out.flush();
            }
            if (killed != 0 && ackedAfter >= WRITES_AFTER) {
                break;
            }
            long now = System.nanoTime();
            check(readyAt == 0 || killed != 0 || now - readyAt < TimeUnit.SECONDS.toNanos(30),
                    "no `killed` line on stdin within 30 s of `ready`");
            check(killed == 0 || now - killed < TimeUnit.SECONDS.toNanos(RECOVERY_S),
                    "only " + ackedAfter + " writes acknowledged in the " + RECOVERY_S + " s after the kill; errors: "
                            + errors);
        }
        long[] value = {-1};
        String[] lastError = {""};
        waitFor("a final GET " + key, () -> {
            try {
                value[0] = Long.parseLong(finalRead.get(key));
                return true;
            } catch (Exception e) {
                lastError[0] = ClientChecks.describe(e);
                return false;
            }
        });
        System.out.println("result acked=" + acked + " ambiguous=" + ambiguous + " refused=" + refusals + " last="
                + last + " final=" + value[0]);
        System.out.println("errors " + errors);
        check(value[0] >= last && value[0] >= acked, "final value " + value[0] + " of " + key + " lost acknowledged writes ("
                + acked + " acknowledged, the last reply " + last + ")");
        check(value[0] <= acked + ambiguous, "final value " + value[0] + " of " + key + " is more than the "
                + acked + " acknowledged writes and " + ambiguous + " ambiguous failures: a write applied twice");
    }

    private ClusterChecks() {}
}
