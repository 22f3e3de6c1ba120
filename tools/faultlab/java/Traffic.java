// A producer and a reader for the controller's failover tests, compiled by the test against the
// Java peer's jars (nothing of it is built into the repository).
//   send NAMESRV TOPIC COUNT PAUSE_MS   prints "ACK key" for each SEND_OK, "FAIL key reason" otherwise
//   read NAMESRV TOPIC LIMIT_MS         prints "MSG key" for every message stored in the topic's queues
// With -Dtraffic.accessKey=... -Dtraffic.secretKey=... both sign every request (AclClientRPCHook), as a client
// of a name server with aclEnable=true must.
import java.util.Set;
import org.apache.rocketmq.acl.common.AclClientRPCHook;
import org.apache.rocketmq.acl.common.SessionCredentials;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.consumer.PullStatus;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

public class Traffic {
    public static void main(String[] args) throws Exception {
        String mode = args[0], namesrv = args[1], topic = args[2];
        if (mode.equals("send")) {
            send(namesrv, topic, Integer.parseInt(args[3]), Long.parseLong(args[4]));
        } else {
            read(namesrv, topic, Long.parseLong(args[3]));
        }
        System.exit(0);
    }

    // The request signer of -Dtraffic.accessKey/-Dtraffic.secretKey, or none
    static AclClientRPCHook signer() {
        String accessKey = System.getProperty("traffic.accessKey");
        if (accessKey == null || accessKey.isEmpty()) {
            return null;
        }
        return new AclClientRPCHook(new SessionCredentials(accessKey, System.getProperty("traffic.secretKey")));
    }

    static void send(String namesrv, String topic, int count, long pause) throws Exception {
        DefaultMQProducer producer = new DefaultMQProducer("failover_test_producer", signer());
        producer.setNamesrvAddr(namesrv);
        producer.setSendMsgTimeout(3000);
        producer.setRetryTimesWhenSendFailed(0);
        producer.setPollNameServerInterval(1000);   // learn the new master's route within a second
        producer.start();
        for (int i = 0; i < count; i++) {
            String key = "k" + i;
            try {
                Message message = new Message(topic, "T", key, ("message " + i).getBytes("UTF-8"));
                SendResult result = producer.send(message);
                if (result.getSendStatus() == SendStatus.SEND_OK) {
                    System.out.println("ACK " + key);
                } else {
                    System.out.println("FAIL " + key + " " + result.getSendStatus());
                }
            } catch (Exception e) {
                System.out.println("FAIL " + key + " " + e.getClass().getSimpleName());
            }
            System.out.flush();
            Thread.sleep(pause);
        }
        producer.shutdown();
    }

    // Every queue read from its first offset to the end offset its broker reports, retrying errors until
    // LIMIT_MS have passed (a reader that stops after an idle time misses a queue whose pulls fail a while,
    // as they do just after a failover while the client's route still names the old master). Prints
    // "QUEUE broker id first end read" per queue, and "INCOMPLETE ..." for one not read to its end.
    static void read(String namesrv, String topic, long limit) throws Exception {
        DefaultMQPullConsumer consumer = new DefaultMQPullConsumer("failover_test_reader", signer());
        consumer.setNamesrvAddr(namesrv);
        consumer.start();
        long deadline = System.currentTimeMillis() + limit;
        Set<MessageQueue> queues = null;
        while (queues == null) {
            try {
                queues = consumer.fetchSubscribeMessageQueues(topic);
            } catch (Exception e) {
                if (System.currentTimeMillis() > deadline) throw e;
                Thread.sleep(200);
            }
        }
        for (MessageQueue queue : queues) {
            long first = -1, end = -1, offset = -1, read = 0;
            while (System.currentTimeMillis() < deadline) {
                try {
                    if (end < 0) {
                        first = consumer.minOffset(queue);
                        end = consumer.maxOffset(queue);
                        offset = first;
                    }
                    if (offset >= end) break;
                    PullResult result = consumer.pull(queue, "*", offset, 32);
                    if (result.getPullStatus() == PullStatus.FOUND) {
                        for (MessageExt message : result.getMsgFoundList()) {
                            System.out.println("MSG " + message.getKeys());
                            read++;
                        }
                    }
                    if (result.getNextBeginOffset() > offset) {
                        offset = result.getNextBeginOffset();
                    } else {
                        Thread.sleep(100);   // nothing yet where the broker said the end is: ask again
                    }
                } catch (Exception e) {
                    Thread.sleep(200);
                }
            }
            String where = queue.getBrokerName() + " " + queue.getQueueId() + " " + first + " " + end + " " + read;
            System.out.println((end >= 0 && offset >= end ? "QUEUE " : "INCOMPLETE ") + where);
            System.out.flush();
        }
        consumer.shutdown();
    }
}
