package lockharness;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.redisson.Redisson;
import org.redisson.RedissonRedLock;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;
import org.redisson.config.Config;

/**
 * A lockharness client (docs/client-protocol.md) that translates the protocol to Redisson,
 * with nothing added. One program, two clients, chosen by the first argument:
 *
 * <ul>
 *   <li>{@code redisson-redlock}: a RedissonRedLock (deprecated by Redisson, still shipped)
 *       over one Redisson client per node, an independent RLock on each;
 *       tryLock(0, ttl_ms, MILLISECONDS). It takes the nodes one after another and reports
 *       no validity: we report ttl_ms minus the time the acquire took, counted from when
 *       the request was received. That is an honest lower bound: every node's key was given
 *       its PEXPIRE ttl after the request arrived, and we deduct the elapsed time as Redlock
 *       does. Its unlock() releases on every node and swallows every error: it cannot say
 *       "not held", so release is true whenever unlock() returns.
 *   <li>{@code redisson-rlock}: one RLock on the first node with the watchdog:
 *       tryLock(0, -1, MILLISECONDS) (no lease time), lockWatchdogTimeout = ttl_ms, so the
 *       lock is held for ttl_ms and renewed every ttl_ms/3 while this process lives. No
 *       validity (null). unlock() throws IllegalMonitorStateException when not held: false.
 * </ul>
 *
 * <p>Redisson locks belong to a thread (the client id and the thread id are the hash field),
 * so this process serves one client and makes every lock call on the main thread. For
 * redisson-rlock the token is that field, {@code <client id>:<thread id>}, the very value
 * the key's hash holds, so the harness's node record can judge its leases (the leases of
 * this process follow one another on its one thread, and carry the same token, as Redisson
 * does); for redisson-redlock (a client per node, each with its own id) it is our own UUID.
 * Each token is mapped to the lock object. Neither client can extend (no abilities).
 * Exceptions (timeouts, connection errors) are {@code error} replies: the outcome is unknown.
 *
 * <p>It speaks protocol 2 (and 1, for a worker that offers only 1): a certain failure is
 * {@code refused} with a reason (version 1: {@code granted: false}, {@code released: false}).
 * A lock taken by another instance of this program (a predecessor the worker restarted) cannot
 * be released here: Redisson ties it to that process's client id, so its release is refused.
 */
public final class RedissonClientMain {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String REDLOCK = "redisson-redlock";
  private static final String RLOCK = "redisson-rlock";
  private static final long WARM_UP_MS = 3000;
  private static final int INIT_CONNECT_MS = 2000;
  private static final String EXIT = "exit after this reply"; // never printed

  private final String client;
  private final List<String> names = new ArrayList<>();
  private final List<String> addresses = new ArrayList<>();
  private final List<RedissonClient> perNode = new ArrayList<>(); // redlock: one per node
  private final Map<Long, RedissonClient> perTtl = new HashMap<>(); // rlock: one per TTL
  private final Map<String, RLock> held = new HashMap<>(); // token -> the lock it names
  private final java.util.Set<String> released = new java.util.HashSet<>(); // tokens let go
  private int timeoutMs = 50;
  private int version; // the protocol version agreed at init
  private boolean initialised;

  private RedissonClientMain(String client) {
    this.client = client;
  }

  public static void main(String[] args) throws Exception {
    // Only replies go to stdout: everything else (Redisson's logs too) goes to stderr.
    PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
    System.setOut(System.err);
    if (args.length != 1 || !(args[0].equals(REDLOCK) || args[0].equals(RLOCK))) {
      System.err.println("usage: redisson-client " + REDLOCK + "|" + RLOCK);
      System.exit(2);
    }
    RedissonClientMain program = new RedissonClientMain(args[0]);
    BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    int exit = 0;
    for (String line; (line = in.readLine()) != null; ) {
      if (line.isBlank()) {
        continue;
      }
      ObjectNode reply = program.answer(line);
      JsonNode exitCode = reply.remove(EXIT); // after close, or a refused init
      out.println(JSON.writeValueAsString(reply));
      out.flush();
      if (exitCode != null) {
        exit = exitCode.asInt();
        break;
      }
    }
    program.shutdown();
    System.exit(exit);
  }

  /** One reply per line; a malformed line or a failed call is an error reply, never a crash. */
  private ObjectNode answer(String line) {
    ObjectNode reply = JSON.createObjectNode();
    JsonNode req;
    try {
      req = JSON.readTree(line);
    } catch (Exception e) {
      return reply.putNull("id").put("error", "malformed request: " + e.getMessage());
    }
    if (req == null || !req.isObject() || !req.path("id").canConvertToLong()) {
      return reply.putNull("id").put("error", "malformed request: no integer id");
    }
    reply.put("id", req.get("id").asLong());
    String op = req.path("op").asText("");
    try {
      if (!initialised && !op.equals("init") && !op.equals("close")) {
        return reply.put("error", "\"" + op + "\" before init");
      }
      switch (op) {
        case "init" -> init(req, reply);
        case "acquire" -> acquire(req, reply);
        case "release" -> release(req, reply);
        case "close" -> reply.put("ok", true).put(EXIT, 0);
        default -> reply.put("error", "unknown op " + JSON.writeValueAsString(op));
      }
    } catch (Exception e) {
      reply.put("error", e.getClass().getSimpleName() + ": " + e.getMessage());
    }
    return reply;
  }

  /** 2 when the worker offers it (protocols), else 1 when init says protocol 1; 0: neither. */
  private static int negotiate(JsonNode req) {
    for (JsonNode offered : req.path("protocols")) {
      if (offered.isInt() && offered.asInt() == 2) {
        return 2;
      }
    }
    return req.path("protocol").asInt() == 1 ? 1 : 0;
  }

  /** A duration as a scenario writes it ("50ms", "1.5s"), in whole ms; -1 if it is not one. */
  private static long durationMs(JsonNode value) {
    var match =
        java.util.regex.Pattern.compile("\\s*([0-9]+(?:\\.[0-9]+)?)\\s*(ns|us|ms|s|m|h)\\s*")
            .matcher(value.isTextual() ? value.asText() : "");
    if (!match.matches()) {
      return -1;
    }
    double unitMs =
        switch (match.group(2)) {
          case "ns" -> 1e-6;
          case "us" -> 1e-3;
          case "ms" -> 1;
          case "s" -> 1e3;
          case "m" -> 6e4;
          default -> 3.6e6;
        };
    return (long) Math.ceil(Double.parseDouble(match.group(1)) * unitMs);
  }

  /** A certain failure with its reason (version 1: the outcome field false, no reason). */
  private void refuse(ObjectNode reply, String field, String reason) {
    if (version >= 2) {
      reply.put("refused", reason);
    } else {
      reply.put(field, false);
    }
  }

  private void init(JsonNode req, ObjectNode reply) {
    int agreed = negotiate(req);
    if (agreed == 0) {
      reply.put("error", "unsupported protocols " + req.path("protocols") + " (this program speaks 1 and 2)");
      reply.put(EXIT, 1);
      return;
    }
    if (initialised) {
      reply.put("error", "init twice");
      return;
    }
    JsonNode nodes = req.path("nodes");
    if (!nodes.isArray() || nodes.isEmpty()) {
      reply.put("error", "init without nodes");
      return;
    }
    JsonNode timeout = req.path("options").path("timeout");
    if (!timeout.isMissingNode()) {
      long ms = durationMs(timeout);
      if (ms <= 0) {
        reply.put("error", "options.timeout must be a positive duration such as \"50ms\", not " + timeout);
        return;
      }
      timeoutMs = (int) ms;
    }
    for (JsonNode node : nodes) {
      names.add(node.path("name").asText());
      addresses.add("redis://" + node.path("host").asText() + ":" + node.path("port").asInt());
    }
    if (client.equals(REDLOCK)) {
      for (String address : addresses) {
        perNode.add(connect(address, null));
      }
    }
    initialised = true;
    version = agreed;
    reply.put("ok", true).put("name", "redisson " + redissonVersion() + " (" + client + ")");
    reply.putArray("abilities"); // no extend: RLock has no extend of its own
    if (version == 2) {
      reply.put("protocol", 2);
    }
  }

  /** Redisson's version from its Maven metadata, which the shaded jar keeps. */
  private static String redissonVersion() {
    String path = "/META-INF/maven/org.redisson/redisson/pom.properties";
    try (var in = RedissonClientMain.class.getResourceAsStream(path)) {
      var properties = new java.util.Properties();
      properties.load(in);
      return properties.getProperty("version");
    } catch (Exception e) {
      return "(unknown version)";
    }
  }

  /**
   * A client, warmed up: with lazy initialisation the first commands pay for the connection
   * and, in a fresh JVM, for loading Netty's and Redisson's classes, well beyond a 50 ms
   * timeout, and RedissonRedLock would count that node as refusing. So DBSIZE until the node
   * answers, for at most WARM_UP_MS; a refused connection ends it at once (errors are only
   * logged: a node down at init is an error at its first use, not at init).
   */
  private RedissonClient connect(String address, Long watchdogMs) {
    RedissonClient redisson = create(address, watchdogMs);
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(WARM_UP_MS);
    for (int attempt = 1; ; attempt++) {
      try {
        redisson.getKeys().count();
        return redisson;
      } catch (RuntimeException e) {
        if (refused(e)) { // down, not slow: no use waiting
          System.err.println("warm-up " + address + ": " + e.getMessage());
          return redisson;
        }
        if (System.nanoTime() > deadline) {
          System.err.println("warm-up " + address + ": no answer after " + attempt + " tries: " + e);
          return redisson;
        }
        sleep(10);
      }
    }
  }

  /** A connection refused (the node is down), not a connection too slow for the timeout. */
  private static boolean refused(Throwable e) {
    for (Throwable cause = e; cause != null; cause = cause.getCause()) {
      // Netty's ConnectTimeoutException is a ConnectException too: slow, not down.
      if (cause instanceof java.net.ConnectException
          && !cause.getClass().getSimpleName().contains("Timeout")) {
        return true;
      }
    }
    return false;
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /**
   * One Redisson client for one node. The per-node timeout is Redisson's connect and response
   * timeout; retryAttempts 0, as Redisson would otherwise resend a timed-out command 4 times.
   * Lazy initialisation: a node that is down when the program starts is an error at its first
   * use, not at init. The pools and thread counts are kept small (a client per node per
   * worker thread adds up); they do not change what a lock call does.
   */
  private Config config(String address, Long watchdogMs) {
    Config config = new Config();
    // Reflection: releases before 3.16 (NAME@VERSION) have no lazy initialisation; there a
    // node down at init is an error at init.
    boolean lazy = call(config, "setLazyInitialization", new Class<?>[] {boolean.class}, true) != null;
    config.setThreads(2).setNettyThreads(2);
    // The locks write no objects: a codec without reflection. Older releases' default
    // (JBoss Marshalling) reflects into java.base, which Java 17 refuses.
    config.setCodec(StringCodec.INSTANCE);
    if (watchdogMs != null) {
      config.setLockWatchdogTimeout(watchdogMs);
    }
    config
        .useSingleServer()
        .setAddress(address)
        // Connected at init when not lazily (a fresh JVM among a dozen on a loaded
        // machine): the connect timeout is roomier there; the response timeout is the same.
        .setConnectTimeout(lazy ? timeoutMs : Math.max(timeoutMs, INIT_CONNECT_MS))
        .setTimeout(timeoutMs)
        .setRetryAttempts(0)
        .setConnectionMinimumIdleSize(1)
        .setConnectionPoolSize(4)
        .setSubscriptionConnectionMinimumIdleSize(1)
        .setSubscriptionConnectionPoolSize(2);
    return config;
  }

  private void acquire(JsonNode req, ObjectNode reply) throws Exception {
    long received = System.nanoTime();
    String key = req.path("key").asText("");
    long ttlMs = req.path("ttl_ms").asLong(0);
    if (key.isEmpty() || ttlMs <= 0 || !req.path("ttl_ms").canConvertToLong()) {
      reply.put("error", "acquire needs key and a positive integer ttl_ms");
      return;
    }
    RLock lock;
    List<RLock> perNodeLocks = new ArrayList<>();
    boolean granted;
    String token;
    if (client.equals(REDLOCK)) {
      for (RedissonClient redisson : perNode) {
        perNodeLocks.add(redisson.getLock(key));
      }
      lock = new RedissonRedLock(perNodeLocks.toArray(new RLock[0]));
      granted = lock.tryLock(0, ttlMs, TimeUnit.MILLISECONDS);
      token = UUID.randomUUID().toString();
    } else {
      // The watchdog timeout is a client setting: one client per TTL, made on first use.
      RedissonClient redisson =
          perTtl.computeIfAbsent(ttlMs, ttl -> connect(addresses.get(0), ttl));
      lock = redisson.getLock(key);
      granted = lock.tryLock(0, -1, TimeUnit.MILLISECONDS);
      token = redisson.getId() + ":" + Thread.currentThread().getId(); // the hash's field
    }
    long elapsedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - received);
    if (!granted) {
      refuse(reply, "granted", "tryLock(0, ...) returned false: held, or no quorum");
      return;
    }
    held.put(token, lock);
    reply.put("granted", true).put("token", token);
    if (client.equals(REDLOCK)) {
      reply.put("validity_ms", Math.max(0, ttlMs - elapsedMs - 1)); // -1: the ms we rounded away
      grants(reply, perNodeLocks);
    } else {
      reply.putNull("validity_ms");
      reply.putArray("grants").add(names.get(0));
    }
    reply.putNull("fencing");
  }

  /**
   * RedissonRedLock does not say which nodes granted, and its lock is a hash (a field per
   * owner) that the worker's GET cannot read: so we observe it through the library, one
   * HEXISTS per node (isHeldByThreadAsync), sent to all nodes at once. Only an observation:
   * a node that does not answer in time is not listed.
   */
  private void grants(ObjectNode reply, List<RLock> perNodeLocks) {
    long thread = Thread.currentThread().getId();
    List<CompletableFuture<Boolean>> asks = new ArrayList<>();
    for (RLock lock : perNodeLocks) {
      asks.add(heldByThread(lock, thread));
    }
    var grants = reply.putArray("grants");
    for (int i = 0; i < asks.size(); i++) {
      try {
        if (asks.get(i).join()) {
          grants.add(names.get(i));
        }
      } catch (Exception e) {
        System.err.println("grants: " + names.get(i) + ": " + e.getMessage());
      }
    }
  }

  /**
   * isHeldByThreadAsync where the release has it (3.13 on); before, the blocking
   * isHeldByThread on a thread of its own, so that the nodes are still asked at once.
   */
  @SuppressWarnings("unchecked")
  private static CompletableFuture<Boolean> heldByThread(RLock lock, long thread) {
    Object asked = call(lock, "isHeldByThreadAsync", new Class<?>[] {long.class}, thread);
    if (asked instanceof CompletionStage<?> stage) {
      return ((CompletionStage<Boolean>) stage).toCompletableFuture();
    }
    return CompletableFuture.supplyAsync(() -> lock.isHeldByThread(thread));
  }

  /** ``target.name(args)`` when its class has that method, else null (an older release). */
  private static Object call(Object target, String name, Class<?>[] types, Object... args) {
    try {
      return target.getClass().getMethod(name, types).invoke(target, args);
    } catch (NoSuchMethodException e) {
      return null;
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException(name + ": " + e.getCause(), e.getCause());
    }
  }

  /**
   * Redisson.create. A release without lazy initialisation (before 3.16, NAME@VERSION)
   * connects here, and a fresh JVM on a loaded machine can take longer than the timeout
   * for its first connection: tried again until WARM_UP_MS, unless the node refused.
   */
  private RedissonClient create(String address, Long watchdogMs) {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(WARM_UP_MS);
    while (true) {
      try {
        return Redisson.create(config(address, watchdogMs));
      } catch (RuntimeException e) {
        boolean connecting = e.getClass().getSimpleName().equals("RedisConnectionException");
        if (!connecting || refused(e) || System.nanoTime() > deadline) {
          throw e;
        }
        System.err.println("connect " + address + ": " + e.getMessage() + "; again");
      }
    }
  }

  private void release(JsonNode req, ObjectNode reply) {
    String key = req.path("lease").path("key").asText("");
    String token = req.path("lease").path("token").asText("");
    if (key.isEmpty() || token.isEmpty()) {
      reply.put("error", "release needs lease.key and lease.token");
      return;
    }
    RLock lock = held.remove(token);
    if (lock == null && released.contains(token)) {
      reply.put("released", false); // released already: not there
      return;
    }
    if (lock == null) {
      // A token this process never granted (a predecessor's: another client id). Unlocking
      // a fresh lock object for the key would release whatever this thread holds under it
      // now, another lease. So no call: certainly not released.
      refuse(reply, "released", "not granted by this program instance (Redisson locks belong to the client that took them)");
      return;
    }
    released.add(token);
    try {
      lock.unlock();
      reply.put("released", true);
    } catch (IllegalMonitorStateException notHeld) {
      System.err.println("release " + key + ": " + notHeld.getMessage());
      reply.put("released", false);
    }
  }

  private void shutdown() {
    for (RedissonClient redisson : perNode) {
      redisson.shutdown(0, timeoutMs, TimeUnit.MILLISECONDS);
    }
    for (RedissonClient redisson : perTtl.values()) {
      redisson.shutdown(0, timeoutMs, TimeUnit.MILLISECONDS);
    }
  }
}
