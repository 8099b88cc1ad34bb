package rialto.compat;

import static rialto.compat.ClientChecks.check;
import static rialto.compat.ClientChecks.eq;
import static rialto.compat.ClientChecks.expectError;
import static rialto.compat.ClientChecks.expectEvent;
import static rialto.compat.ClientChecks.sha1Hex;
import static rialto.compat.ClientChecks.waitFor;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.LettuceFutures;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.RedisNoScriptException;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.TrackingArgs;
import io.lettuce.core.TransactionResult;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisAsyncCommands;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.protocol.ProtocolVersion;
import io.lettuce.core.pubsub.RedisPubSubAdapter;
import io.lettuce.core.pubsub.StatefulRedisPubSubConnection;
import io.lettuce.core.pubsub.api.sync.RedisPubSubCommands;
import io.lettuce.core.support.caching.CacheAccessor;
import io.lettuce.core.support.caching.CacheFrontend;
import io.lettuce.core.support.caching.ClientSideCaching;

/**
 * Lettuce 6 scenarios: transactions through the sync API, WATCH, async pipelining with autoflush
 * off, scripting, pub/sub with a listener, each with ClientOptions.protocolVersion RESP2 and RESP3;
 * client-side caching with RESP3 only (Lettuce's ClientSideCaching listens for RESP3 invalidation
 * pushes on the tracking connection itself; RESP2 would need a REDIRECT connection it does not set up).
 */
final class LettuceChecks {
    static void register(Map<String, ClientChecks.Scenario> m) {
        for (int proto : new int[] {2, 3}) {
            String sfx = "_resp" + proto;
            m.put("lettuce_multi" + sfx, (h, p) -> multi(client(h, p, proto)));
            m.put("lettuce_watch" + sfx, (h, p) -> watch(client(h, p, proto)));
            m.put("lettuce_pipeline" + sfx, (h, p) -> pipeline(client(h, p, proto)));
            m.put("lettuce_scripting" + sfx, (h, p) -> scripting(client(h, p, proto)));
            m.put("lettuce_pubsub" + sfx, (h, p) -> pubsub(client(h, p, proto)));
        }
        m.put("lettuce_client_side_caching_resp3", (h, p) -> clientSideCaching(client(h, p, 3)));
    }

    static RedisClient client(String host, int port, int proto) {
        RedisClient c = RedisClient.create(RedisURI.builder()
                .withHost(host)
                .withPort(port)
                .withTimeout(Duration.ofSeconds(5))
                .build());
        c.setOptions(ClientOptions.builder()
                .protocolVersion(proto == 3 ? ProtocolVersion.RESP3 : ProtocolVersion.RESP2)
                .autoReconnect(false)
                .timeoutOptions(TimeoutOptions.enabled(Duration.ofSeconds(5)))
                .build());
        return c;
    }

    /** Closes the connections; the process exits right after, so the client's threads are left alone. */
    private static void closeAll(AutoCloseable... cs) {
        for (AutoCloseable c : cs) {
            try {
                c.close();
            } catch (Exception ignored) {
                // closing is best effort
            }
        }
    }

    static void multi(RedisClient client) {
        StatefulRedisConnection<String, String> conn = client.connect();
        StatefulRedisConnection<String, String> otherConn = client.connect();
        try {
            RedisCommands<String, String> sync = conn.sync();
            RedisCommands<String, String> other = otherConn.sync();
            eq("OK", sync.multi(), "MULTI reply");
            check(sync.isOpen(), "connection open in MULTI");
            eq(null, sync.set("lt:a", "1"), "SET inside MULTI (sync API returns null for queued commands)");
            // Queued, not run: another connection does not see the write yet.
            eq(null, other.get("lt:a"), "GET from another connection while the SET is only queued");
            sync.incr("lt:a");
            sync.incrby("lt:a", 10);
            sync.get("lt:a");
            sync.exists("lt:missing");
            TransactionResult r = sync.exec();
            check(!r.wasDiscarded(), "transaction discarded without a WATCH conflict");
            eq(5, r.size(), "TransactionResult.size()");
            eq("OK", r.get(0), "result 0 (SET)");
            eq(2L, r.get(1), "result 1 (INCR)");
            eq(12L, r.get(2), "result 2 (INCRBY)");
            eq("12", r.get(3), "result 3 (GET)");
            eq(0L, r.get(4), "result 4 (EXISTS)");
            eq("12", other.get("lt:a"), "GET from another connection after EXEC");

            // Empty transaction.
            sync.multi();
            r = sync.exec();
            check(!r.wasDiscarded() && r.size() == 0, "empty transaction: discarded=" + r.wasDiscarded() + " size=" + r.size());

            // A command failing at EXEC time: its slot holds the error, the others ran.
            sync.multi();
            sync.set("lt:s", "abc");
            sync.incr("lt:s");
            sync.set("lt:t", "ok");
            r = sync.exec();
            check(!r.wasDiscarded(), "transaction with a runtime error reported as discarded");
            eq(3, r.size(), "size of a transaction with a runtime error");
            eq("OK", r.get(0), "result 0");
            Object err = r.get(1);
            check(err instanceof RedisCommandExecutionException && String.valueOf(((Exception) err).getMessage()).contains("not an integer"),
                    "result 1 must be the INCR error, got " + err);
            eq("OK", r.get(2), "result 2");
            eq("ok", sync.get("lt:t"), "key written after the failing command");

            // DISCARD.
            sync.multi();
            sync.set("lt:t", "discarded");
            eq("OK", sync.discard(), "DISCARD reply");
            eq("ok", sync.get("lt:t"), "key after DISCARD");
        } finally {
            closeAll(conn, otherConn);
        }
    }

    static void watch(RedisClient client) {
        StatefulRedisConnection<String, String> conn = client.connect();
        StatefulRedisConnection<String, String> otherConn = client.connect();
        try {
            RedisCommands<String, String> sync = conn.sync();
            RedisCommands<String, String> other = otherConn.sync();
            sync.set("lw:k", "0");
            eq("OK", sync.watch("lw:k"), "WATCH reply");
            other.set("lw:k", "theirs");
            sync.multi();
            sync.set("lw:k", "mine");
            sync.incr("lw:side");
            TransactionResult r = sync.exec();
            check(r.wasDiscarded(), "EXEC after a watched key changed: wasDiscarded() must be true, results " + r.stream().toList());
            eq(0, r.size(), "size of a discarded transaction");
            eq("theirs", sync.get("lw:k"), "watched key after the aborted transaction");
            eq(null, sync.get("lw:side"), "key the aborted transaction would have written");

            // Optimistic retry: read, watch, write; succeeds on the second try.
            for (int attempt = 1; ; attempt++) {
                sync.watch("lw:k");
                String v = sync.get("lw:k");
                if (attempt == 1) {
                    other.append("lw:k", "!"); // interference on the first attempt only
                }
                sync.multi();
                sync.set("lw:k", v + "+" + attempt);
                r = sync.exec();
                if (!r.wasDiscarded()) {
                    eq(2, attempt, "attempt that committed");
                    break;
                }
                check(attempt < 2, "transaction discarded on attempt " + attempt + " without interference");
            }
            eq("theirs!+2", sync.get("lw:k"), "value written by the retried transaction");

            // UNWATCH.
            sync.watch("lw:k");
            eq("OK", sync.unwatch(), "UNWATCH reply");
            other.set("lw:k", "x");
            sync.multi();
            sync.set("lw:k", "y");
            check(!sync.exec().wasDiscarded(), "transaction discarded after UNWATCH");
            eq("y", sync.get("lw:k"), "value after UNWATCH + EXEC");
        } finally {
            closeAll(conn, otherConn);
        }
    }

    static void pipeline(RedisClient client) throws Exception {
        StatefulRedisConnection<String, String> conn = client.connect();
        try {
            RedisAsyncCommands<String, String> async = conn.async();
            conn.setAutoFlushCommands(false);
            List<RedisFuture<String>> sets = new ArrayList<>();
            for (int i = 0; i < 1000; i++) {
                sets.add(async.set("lp:" + i, "value-" + i));
            }
            RedisFuture<Long> dbsize = async.dbsize();
            check(!sets.get(0).isDone(), "a command completed before flushCommands() with autoflush off");
            conn.flushCommands();
            List<RedisFuture<?>> all = new ArrayList<>(sets);
            all.add(dbsize);
            check(LettuceFutures.awaitAll(Duration.ofSeconds(5), all.toArray(new RedisFuture[0])),
                    "1000 pipelined SETs did not complete within 5s");
            for (int i = 0; i < sets.size(); i++) {
                eq("OK", sets.get(i).get(), "pipelined SET #" + i);
            }
            eq(1000L, dbsize.get(), "DBSIZE after the pipelined SETs");

            // And 1000 GETs plus an error in the middle, in one flush.
            List<RedisFuture<String>> gets = new ArrayList<>();
            for (int i = 0; i < 1000; i++) {
                gets.add(async.get("lp:" + i));
            }
            RedisFuture<Long> bad = async.incr("lp:0");
            RedisFuture<String> after = async.get("lp:999");
            conn.flushCommands();
            // (awaitAll rethrows a failed future's error: leave out the INCR, answered before `after`.)
            List<RedisFuture<?>> all2 = new ArrayList<>(gets);
            all2.add(after);
            check(LettuceFutures.awaitAll(Duration.ofSeconds(5), all2.toArray(new RedisFuture[0])),
                    "1000 pipelined GETs did not complete within 5s");
            for (int i = 0; i < gets.size(); i++) {
                eq("value-" + i, gets.get(i).get(), "pipelined GET #" + i);
            }
            expectError("pipelined INCR of a non-integer", "not an integer", bad::get);
            eq("value-999", after.get(), "pipelined GET after an error reply");

            conn.setAutoFlushCommands(true);
            eq("PONG", conn.sync().ping(), "PING with autoflush back on");
        } finally {
            closeAll(conn);
        }
    }

    static void scripting(RedisClient client) {
        StatefulRedisConnection<String, String> conn = client.connect();
        try {
            RedisCommands<String, String> sync = conn.sync();
            String[] keys = {"ls:a", "ls:b"};
            List<Object> r = sync.eval(JedisChecks.SCRIPT, ScriptOutputType.MULTI, keys, "x", "y");
            eq(Arrays.asList("x", "y", 2L, 2L), r, "EVAL of a 2-key script");
            eq("y", sync.get("ls:b"), "key written by the script");

            String sha = sync.scriptLoad(JedisChecks.SCRIPT);
            eq(sha1Hex(JedisChecks.SCRIPT), sha, "SCRIPT LOAD returns the SHA1");
            eq(List.of(true), sync.scriptExists(sha), "SCRIPT EXISTS");
            r = sync.evalsha(sha, ScriptOutputType.MULTI, new String[] {"ls:c", "ls:d"}, "1", "2");
            eq(Arrays.asList("1", "2", 2L, 2L), r, "EVALSHA");

            Long n = sync.eval("return redis.call('INCRBY', KEYS[1], ARGV[1])", ScriptOutputType.INTEGER,
                    new String[] {"ls:n"}, "5");
            eq(5L, n, "EVAL INTEGER");
            String status = sync.eval("return redis.call('SET', KEYS[1], 'v')", ScriptOutputType.STATUS, "ls:v");
            eq("OK", status, "EVAL STATUS");
            String value = sync.eval("return redis.call('GET', KEYS[1])", ScriptOutputType.VALUE, "ls:v");
            eq("v", value, "EVAL VALUE");
            Boolean bool = sync.eval("return redis.call('EXISTS', KEYS[1]) == 1", ScriptOutputType.BOOLEAN, "ls:v");
            eq(true, bool, "EVAL BOOLEAN");
            expectError("EVAL error_reply", "MYERR boom",
                    () -> sync.eval("return redis.error_reply('MYERR boom')", ScriptOutputType.STATUS));
            try {
                sync.evalsha(sha1Hex("return 'never loaded'"), ScriptOutputType.VALUE);
                throw new ClientChecks.CheckFailed("EVALSHA of an unknown script succeeded");
            } catch (RedisNoScriptException e) {
                check(e.getMessage().startsWith("NOSCRIPT"), "NOSCRIPT message: " + e.getMessage());
            }
        } finally {
            closeAll(conn);
        }
    }

    static void pubsub(RedisClient client) throws Exception {
        StatefulRedisPubSubConnection<String, String> ps = client.connectPubSub();
        StatefulRedisConnection<String, String> pubConn = client.connect();
        try {
            BlockingQueue<String> events = new LinkedBlockingQueue<>();
            ps.addListener(new RedisPubSubAdapter<String, String>() {
                @Override
                public void message(String channel, String message) {
                    events.add("message " + channel + " " + message);
                }

                @Override
                public void message(String pattern, String channel, String message) {
                    events.add("pmessage " + pattern + " " + channel + " " + message);
                }

                @Override
                public void subscribed(String channel, long count) {
                    events.add("subscribe " + channel + " " + count);
                }

                @Override
                public void psubscribed(String pattern, long count) {
                    events.add("psubscribe " + pattern + " " + count);
                }

                @Override
                public void unsubscribed(String channel, long count) {
                    events.add("unsubscribe " + channel + " " + count);
                }

                @Override
                public void punsubscribed(String pattern, long count) {
                    events.add("punsubscribe " + pattern + " " + count);
                }
            });
            RedisPubSubCommands<String, String> sub = ps.sync();
            RedisCommands<String, String> pub = pubConn.sync();

            sub.subscribe("lps:ch1", "lps:ch2");
            expectEvent(events, "subscribe lps:ch1 1");
            expectEvent(events, "subscribe lps:ch2 2");
            for (int i = 0; i < 20; i++) {
                String ch = i % 2 == 0 ? "lps:ch1" : "lps:ch2";
                eq(1L, pub.publish(ch, "m" + i), "PUBLISH " + ch + " receivers");
            }
            for (int i = 0; i < 20; i++) {
                expectEvent(events, "message " + (i % 2 == 0 ? "lps:ch1" : "lps:ch2") + " m" + i);
            }
            eq(0L, pub.publish("lps:nobody", "x"), "PUBLISH to a channel nobody listens on");

            sub.psubscribe("lps:ch*");
            expectEvent(events, "psubscribe lps:ch* 3");
            eq(2L, pub.publish("lps:ch2", "both"), "PUBLISH receivers with a channel and a pattern subscription");
            expectEvent(events, "message lps:ch2 both");
            expectEvent(events, "pmessage lps:ch* lps:ch2 both");

            sub.unsubscribe("lps:ch1", "lps:ch2");
            expectEvent(events, "unsubscribe lps:ch1 2");
            expectEvent(events, "unsubscribe lps:ch2 1");
            eq(1L, pub.publish("lps:ch1", "pattern-only"), "PUBLISH after UNSUBSCRIBE (pattern still matches)");
            expectEvent(events, "pmessage lps:ch* lps:ch1 pattern-only");
            sub.punsubscribe("lps:ch*");
            expectEvent(events, "punsubscribe lps:ch* 0");
            eq(0L, pub.publish("lps:ch1", "nobody"), "PUBLISH after everything was unsubscribed");

            // Subscribing again on the same connection works.
            sub.subscribe("lps:again");
            expectEvent(events, "subscribe lps:again 1");
            eq(1L, pub.publish("lps:again", "hi"), "PUBLISH after re-subscribing");
            expectEvent(events, "message lps:again hi");
            check(events.poll(50, TimeUnit.MILLISECONDS) == null, "unexpected extra pub/sub event");
        } finally {
            closeAll(ps, pubConn);
        }
    }

    static void clientSideCaching(RedisClient client) throws Exception {
        StatefulRedisConnection<String, String> conn = client.connect();
        StatefulRedisConnection<String, String> otherConn = client.connect();
        try {
            RedisCommands<String, String> other = otherConn.sync();
            other.set("csc:k", "v1");
            other.set("csc:j", "j1");
            Map<String, String> map = new ConcurrentHashMap<>();
            CacheFrontend<String, String> frontend =
                    ClientSideCaching.enable(CacheAccessor.forMap(map), conn, TrackingArgs.Builder.enabled());
            try {
                eq("v1", frontend.get("csc:k"), "first read through the cache");
                eq("v1", map.get("csc:k"), "cached value after the first read");
                eq("j1", frontend.get("csc:j"), "first read of a second key");
                eq("v1", frontend.get("csc:k"), "second read (served from the cache)");

                // Another connection modifies the key: the server sends an invalidation push.
                other.set("csc:k", "v2");
                waitFor("the cache entry of csc:k to be invalidated after SET from another connection",
                        () -> !map.containsKey("csc:k"));
                eq("j1", map.get("csc:j"), "an unrelated cached key stays cached");
                eq("v2", frontend.get("csc:k"), "read after invalidation fetches the new value");
                eq("v2", map.get("csc:k"), "cache holds the new value");

                // Invalidation is re-armed by the new read: DEL invalidates again.
                other.del("csc:k");
                waitFor("the cache entry of csc:k to be invalidated after DEL", () -> !map.containsKey("csc:k"));
                eq(null, frontend.get("csc:k"), "read of the deleted key");

                // A write of another key type and an expiry-setting command invalidate too.
                other.expire("csc:j", 100);
                waitFor("the cache entry of csc:j to be invalidated after EXPIRE", () -> !map.containsKey("csc:j"));
                eq("j1", frontend.get("csc:j"), "read after EXPIRE");
            } finally {
                frontend.close();
            }
        } finally {
            closeAll(conn, otherConn);
        }
    }

    private LettuceChecks() {}
}
