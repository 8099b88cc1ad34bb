package rialto.compat;

import static rialto.compat.ClientChecks.check;
import static rialto.compat.ClientChecks.eq;
import static rialto.compat.ClusterChecks.quietly;

import java.net.ConnectException;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Deque;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import redis.clients.jedis.ClusterCommandObjects;
import redis.clients.jedis.ClusterPipeline;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.JedisCluster;
import redis.clients.jedis.Response;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.util.JedisClusterCRC16;

/**
 * Jedis 5 {@code JedisCluster} against a cluster, from one seed address. Jedis reads from replicas
 * only where asked: with {@code readOnlyForRedisClusterReplicas()} it keeps the replicas in its slot
 * cache and sends READONLY on every connection, and {@code executeCommandToReplica} sends one
 * command to a replica of its slot; every other command goes to the master.
 */
final class JedisClusterChecks {
    static void register(Map<String, ClientChecks.Scenario> m) {
        m.put("jedis_cluster", JedisClusterChecks::scenario);
        m.put("jedis_cluster_failover", JedisClusterChecks::failover);
    }

    static JedisClientConfig config(boolean replicaReads) {
        DefaultJedisClientConfig.Builder b = DefaultJedisClientConfig.builder()
                .connectionTimeoutMillis(5000)
                .socketTimeoutMillis(5000);
        if (replicaReads) {
            b.readOnlyForRedisClusterReplicas();
        }
        return b.build();
    }

    static void scenario(String host, int port) throws Exception {
        String seed = host + ":" + port;
        List<ClusterChecks.Range> ranges = ClusterChecks.stableSlots(seed);
        ClusterCommandObjects commands = new ClusterCommandObjects();
        try (JedisCluster jc = new JedisCluster(Set.of(new HostAndPort(host, port)), config(true), 5,
                Duration.ofSeconds(10))) {
            // The seed alone is enough to learn every address of every slot range.
            Set<String> known = jc.getClusterNodes().keySet();
            for (ClusterChecks.Range r : ranges) {
                for (String a : r.addresses()) {
                    check(known.contains(a), "JedisCluster does not know " + a + " (it knows " + known + ")");
                }
            }

            // Many keys over every slot range: SET from 8 threads, then GET from the masters.
            Map<String, String> kv = new LinkedHashMap<>();
            for (int i = 0; i < 300; i++) {
                kv.put("jedis:k:" + i, "jedis-v" + i);
            }
            ExecutorService pool = Executors.newFixedThreadPool(8);
            try {
                Map<String, Future<String>> sets = new LinkedHashMap<>();
                kv.forEach((k, v) -> sets.put(k, pool.submit(() -> jc.set(k, v))));
                for (Map.Entry<String, Future<String>> e : sets.entrySet()) {
                    eq("OK", e.getValue().get(), "SET " + e.getKey());
                }
            } finally {
                pool.shutdownNow();
            }
            for (Map.Entry<String, String> e : kv.entrySet()) {
                eq(e.getValue(), jc.get(e.getKey()), "GET " + e.getKey());
            }
            for (ClusterChecks.Range r : ranges) {
                check(kv.keySet().stream().anyMatch(k -> r.has(JedisClusterCRC16.getSlot(k))),
                        "no key in slots " + r.lo() + "-" + r.hi());
            }

            // Keys of one hash tag go together, from the master and from a replica.
            eq("OK", jc.mset("{user:1}:a", "jedis-a", "{user:1}:b", "jedis-b"), "MSET {user:1}:a {user:1}:b");
            eq(List.of("jedis-a", "jedis-b"), jc.mget("{user:1}:a", "{user:1}:b"), "MGET {user:1}:a {user:1}:b");
            ClusterChecks.waitFor("MGET {user:1}:a {user:1}:b from a replica", () -> quietly(
                    () -> List.of("jedis-a", "jedis-b").equals(
                            jc.executeCommandToReplica(commands.mget("{user:1}:a", "{user:1}:b")))));

            // A pipeline of INCRs over every slot range: each reply exact, in order.
            List<String> counters = ClusterChecks.keysAcross(ranges, "jedis:pipe:", 2);
            counters.forEach(jc::del);
            try (ClusterPipeline p = jc.pipelined()) {
                List<Response<Long>> replies = new ArrayList<>();
                for (int i = 0; i < 4 * counters.size(); i++) {
                    replies.add(p.incr(counters.get(i % counters.size())));
                }
                p.sync();
                for (int i = 0; i < replies.size(); i++) {
                    eq((long) (i / counters.size() + 1), replies.get(i).get(),
                            "pipelined INCR #" + i + " (" + counters.get(i % counters.size()) + ")");
                }
            }

            // Reads sent to replicas are served by replicas only; plain reads by the masters only.
            ClusterChecks.waitFor("replicas to apply the writes", () -> quietly(() -> kv.entrySet().stream()
                    .allMatch(e -> e.getValue().equals(jc.executeCommandToReplica(commands.get(e.getKey()))))));
            ClusterChecks.checkReadsLand(seed, kv, k -> jc.executeCommandToReplica(commands.get(k)),
                    ClusterChecks.Route.REPLICAS, "executeCommandToReplica(GET)");
            ClusterChecks.checkReadsLand(seed, kv, jc::get, ClusterChecks.Route.MASTER, "get()");
        }
    }

    static void failover(String host, int port) throws Exception {
        // One attempt per command: on a broken connection Jedis would send the INCR again by
        // itself, and one that was applied before the break would then count twice, unseen.
        try (JedisCluster jc = new JedisCluster(Set.of(new HostAndPort(host, port)), config(false), 1,
                Duration.ofSeconds(5))) {
            String key = "jedis:failover";
            ClusterChecks.waitFor("DEL " + key, () -> quietly(() -> jc.del(key) >= 0));
            ClusterChecks.failover(() -> jc.incr(key), jc::get, key, JedisClusterChecks::refused);
        }
    }

    /**
     * The write was certainly not applied: the server answered with an error that says so (MOVED,
     * TRYAGAIN...), or the client could not connect to send it.
     */
    static boolean refused(Throwable e) {
        // Out of attempts, JedisCluster throws an exception of its own with the last failure suppressed.
        Deque<Throwable> todo = new ArrayDeque<>(List.of(e));
        Set<Throwable> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        while (!todo.isEmpty()) {
            Throwable t = todo.pop();
            if (!seen.add(t)) {
                continue;
            }
            if (t instanceof JedisDataException) {
                return !String.valueOf(t.getMessage()).contains("may still be applied");
            }
            if (t instanceof ConnectException) {
                return true;
            }
            if (t.getCause() != null) {
                todo.push(t.getCause());
            }
            todo.addAll(List.of(t.getSuppressed()));
        }
        return false;
    }

    private JedisClusterChecks() {}
}
