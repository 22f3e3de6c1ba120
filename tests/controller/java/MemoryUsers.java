// A 5.3.3 broker's user store kept in memory, for the tests that run real brokers signing with
// innerClientAuthenticationCredentials: such a broker first stores its inner client's user through the configured
// authenticationMetadataProvider and refuses to start without one, and the peer kit's RocksDB (what the Local
// provider keeps users in) has no native library. Nothing is persisted; the broker's own authentication stays off.
// Compiled against the peer's jars at test time (tests/javapeers.py), never built into the repository.
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import org.apache.rocketmq.auth.authentication.model.User;
import org.apache.rocketmq.auth.authentication.provider.AuthenticationMetadataProvider;
import org.apache.rocketmq.auth.config.AuthConfig;

public class MemoryUsers implements AuthenticationMetadataProvider {
    private final Map<String, User> users = new ConcurrentHashMap<>();

    @Override
    public void initialize(AuthConfig authConfig, Supplier<?> metadataService) {
    }

    @Override
    public void shutdown() {
    }

    @Override
    public CompletableFuture<Void> createUser(User user) {
        users.put(user.getUsername(), user);
        return CompletableFuture.completedFuture(null);
    }

    @Override
    public CompletableFuture<Void> deleteUser(String username) {
        users.remove(username);
        return CompletableFuture.completedFuture(null);
    }

    @Override
    public CompletableFuture<Void> updateUser(User user) {
        return createUser(user);   // a map: creating and replacing are one put
    }

    @Override
    public CompletableFuture<User> getUser(String username) {
        return CompletableFuture.completedFuture(users.get(username));
    }

    @Override
    public CompletableFuture<List<User>> listUser(String filter) {
        List<User> found = new ArrayList<>();
        for (User user : users.values()) {
            if (filter == null || filter.isEmpty() || user.getUsername().contains(filter)) {
                found.add(user);
            }
        }
        return CompletableFuture.completedFuture(found);
    }
}
