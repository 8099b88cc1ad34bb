package rialto.compat;

import static rialto.compat.ClientChecks.check;
import static rialto.compat.ClientChecks.eq;
import static rialto.compat.ClusterChecks.quietly;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import io.lettuce.core.LettuceFutures;
import io.lettuce.core.ReadFrom;
import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisConnectionException;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.RedisURI;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.cluster.ClusterClientOptions;
import io.lettuce.core.cluster.ClusterTopologyRefreshOptions;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.api.async.RedisAdvancedClusterAsyncCommands;
import io.lettuce.core.cluster.api.sync.RedisAdvancedClusterCommands;
import io.lettuce.core.cluster.models.partitions.Partitions;
import io.lettuce.core.cluster.models.partitions.RedisClusterNode;

/**
 * Lettuce 6 {@code RedisClusterClient} against a cluster, from one seed address, with every adaptive
 * topology refresh trigger on. The scenario reads with {@code ReadFrom.REPLICA}, so every read goes
 * to a replica.
 */
final class LettuceClusterChecks {
    static void register(Map<String, ClientChecks.Scenario> m) {
        m.put("lettuce_cluster", LettuceClusterChecks::scenario);
        m.put("lettuce_cluster_failover", LettuceClusterChecks::failover);
    }

    static RedisClusterClient client(String host, int port, ClusterClientOptions.Builder options) {
        RedisClusterClient c = RedisClusterClient.create(RedisURI.builder()
                .withHost(host)
                .withPort(port)
                .withTimeout(Duration.ofSeconds(5))
                .build());
        c.setOptions(options.timeoutOptions(TimeoutOptions.enabled(Duration.ofSeconds(5))).build());
        return c;
    }

    static String addr(RedisClusterNode n) {
        return n.getUri().getHost() + ":" + n.getUri().getPort();
    }

    static void scenario(String host, int port) throws Exception {
        String seed = host + ":" + port;
        List<ClusterChecks.Range> ranges = ClusterChecks.stableSlots(seed);
        RedisClusterClient client = client(host, port, ClusterClientOptions.builder()
                .topologyRefreshOptions(ClusterTopologyRefreshOptions.builder()
                        .enableAllAdaptiveRefreshTriggers()
                        .build()));
        StatefulRedisClusterConnection<String, String> conn = client.connect();
        try {
            conn.setReadFrom(ReadFrom.REPLICA);
            RedisAdvancedClusterCommands<String, String> sync = conn.sync();
            RedisAdvancedClusterAsyncCommands<String, String> async = conn.async();

            // The seed alone is enough to learn the topology (CLUSTER NODES): every range's master
            // and its replicas.
            Partitions parts = client.getPartitions();
            for (ClusterChecks.Range r : ranges) {
                RedisClusterNode m = parts.getMasterBySlot(r.lo());
                check(m != null && addr(m).equals(r.master()) && m.getSlots().contains(r.hi()),
                        "Lettuce's master of slots " + r.lo() + "-" + r.hi() + ": " + (m == null ? null : addr(m))
                                + ", CLUSTER SLOTS says " + r.master() + "; partitions: " + parts);
                List<String> replicas = parts.stream().filter(n -> m.getNodeId().equals(n.getSlaveOf()))
                        .map(LettuceClusterChecks::addr).sorted().toList();
                eq(r.replicas().stream().sorted().toList(), replicas, "Lettuce's replicas of " + r.master());
            }

            // Many keys over every slot range: SET asynchronously, then GET (from replicas, which
            // apply a write a moment after the master acknowledged it).
            Map<String, String> kv = new LinkedHashMap<>();
            for (int i = 0; i < 300; i++) {
                kv.put("lettuce:k:" + i, "lettuce-v" + i);
            }
            List<RedisFuture<String>> sets = new ArrayList<>();
            kv.forEach((k, v) -> sets.add(async.set(k, v)));
            check(LettuceFutures.awaitAll(Duration.ofSeconds(20), sets.toArray(new RedisFuture[0])),
                    "300 asynchronous SETs did not complete in 20 s");
            for (RedisFuture<String> f : sets) {
                eq("OK", f.get(), "asynchronous SET");
            }
            ClusterChecks.waitFor("GETs to return the values written", () -> quietly(
                    () -> kv.entrySet().stream().allMatch(e -> e.getValue().equals(sync.get(e.getKey())))));

            // Keys of one hash tag go together.
            eq("OK", sync.mset(Map.of("{user:1}:a", "lettuce-a", "{user:1}:b", "lettuce-b")),
                    "MSET {user:1}:a {user:1}:b");
            ClusterChecks.waitFor("MGET {user:1}:a {user:1}:b", () -> quietly(() -> sync.mget("{user:1}:a", "{user:1}:b")
                    .stream().map(x -> x.getValueOrElse(null)).toList().equals(List.of("lettuce-a", "lettuce-b"))));

            // A pipeline of INCRs over every slot range (autoflush off, one flush): exact replies.
            List<String> counters = ClusterChecks.keysAcross(ranges, "lettuce:pipe:", 2);
            counters.forEach(sync::del);
            List<RedisFuture<Long>> replies = new ArrayList<>();
            conn.setAutoFlushCommands(false);
            try {
                for (int i = 0; i < 4 * counters.size(); i++) {
                    replies.add(async.incr(counters.get(i % counters.size())));
                }
                conn.flushCommands();
                check(LettuceFutures.awaitAll(Duration.ofSeconds(10), replies.toArray(new RedisFuture[0])),
                        "pipelined INCRs did not complete in 10 s");
            } finally {
                conn.setAutoFlushCommands(true);
            }
            for (int i = 0; i < replies.size(); i++) {
                eq((long) (i / counters.size() + 1), replies.get(i).get(),
                        "pipelined INCR #" + i + " (" + counters.get(i % counters.size()) + ")");
            }

            // ReadFrom.REPLICA: every GET served by a replica, none by the master.
            ClusterChecks.checkReadsLand(seed, kv, sync::get, ClusterChecks.Route.REPLICAS, "GET with ReadFrom.REPLICA");
        } finally {
            conn.close();
        }
    }

    static void failover(String host, int port) throws Exception {
        RedisClusterClient client = client(host, port, ClusterClientOptions.builder()
                // At most once: with reconnects on, a command in flight when its connection drops
                // is sent again, and one that was applied before the drop would count twice, unseen.
                .autoReconnect(false)
                .topologyRefreshOptions(ClusterTopologyRefreshOptions.builder()
                        .enableAllAdaptiveRefreshTriggers()
                        // Without reconnect attempts, no adaptive trigger notices a dead master:
                        // the topology is also polled.
                        .enablePeriodicRefresh(Duration.ofSeconds(1))
                        .build()));
        StatefulRedisClusterConnection<String, String> conn = client.connect();
        try {
            RedisAdvancedClusterCommands<String, String> sync = conn.sync();
            String key = "lettuce:failover";
            ClusterChecks.waitFor("DEL " + key, () -> quietly(() -> sync.del(key) >= 0));
            ClusterChecks.failover(() -> sync.incr(key), sync::get, key, LettuceClusterChecks::refused);
        } finally {
            conn.close();
        }
    }

    /**
     * The write was certainly not applied: the server answered with an error that says so
     * (TRYAGAIN...), or the client did not send it (it could not connect, or its connection to the
     * slot's master was down and rejected the command).
     */
    static boolean refused(Throwable e) {
        if (e instanceof RedisCommandExecutionException) {
            return !String.valueOf(e.getMessage()).contains("may still be applied");
        }
        return e instanceof RedisConnectionException
                || String.valueOf(e.getMessage()).startsWith("Currently not connected. Commands are rejected.");
    }

    private LettuceClusterChecks() {}
}
