import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Map;
import java.util.TreeMap;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/** Signs ext fields the way AclClientRPCHook + AclUtils.combineRequestContent + AclSigner do.
 *  Args: secretKey, bodyHex ("-" for none), then key=value pairs. Prints the signature. */
public class AclSignCheck {
    public static void main(String[] args) throws Exception {
        String secret = args[0];
        byte[] body = args[1].equals("-") ? null : hex(args[1]);
        TreeMap<String, String> fields = new TreeMap<>();
        for (int i = 2; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            fields.put(args[i].substring(0, eq), args[i].substring(eq + 1));
        }
        StringBuilder sb = new StringBuilder("");
        for (Map.Entry<String, String> e : fields.entrySet()) {
            if (!"Signature".equals(e.getKey())) {
                sb.append(e.getValue());
            }
        }
        byte[] b1 = sb.toString().getBytes(StandardCharsets.UTF_8);
        byte[] total = new byte[b1.length + (body == null ? 0 : body.length)];
        System.arraycopy(b1, 0, total, 0, b1.length);
        if (body != null) System.arraycopy(body, 0, total, b1.length, body.length);
        Mac mac = Mac.getInstance("HmacSHA1");
        mac.init(new SecretKeySpec(secret.getBytes(StandardCharsets.UTF_8), "HmacSHA1"));
        System.out.println(Base64.getEncoder().encodeToString(mac.doFinal(total)));
    }

    static byte[] hex(String s) {
        byte[] out = new byte[s.length() / 2];
        for (int i = 0; i < out.length; i++) out[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        return out;
    }
}
