// A producer and a reader for the controller's failover tests, compiled by the test against the
// Java peer's jars (nothing of it is built into the repository).
//   send NAMESRV TOPIC COUNT PAUSE_MS   prints "ACK key" for each SEND_OK, "FAIL key reason" otherwise
//   read NAMESRV TOPIC IDLE_MS          prints "MSG key" for every message stored in the topic's queues
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
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

    static void send(String namesrv, String topic, int count, long pause) throws Exception {
        DefaultMQProducer producer = new DefaultMQProducer("failover_test_producer");
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

    static void read(String namesrv, String topic, long idle) throws Exception {
        DefaultLitePullConsumer consumer = new DefaultLitePullConsumer("failover_test_reader");
        consumer.setNamesrvAddr(namesrv);
        consumer.setAutoCommit(false);
        consumer.start();
        Collection<MessageQueue> queues = consumer.fetchMessageQueues(topic);
        consumer.assign(new ArrayList<>(queues));
        for (MessageQueue queue : queues) {
            consumer.seekToBegin(queue);
        }
        long last = System.currentTimeMillis();
        while (System.currentTimeMillis() - last < idle) {
            List<MessageExt> messages = consumer.poll(500);
            for (MessageExt message : messages) {
                System.out.println("MSG " + message.getKeys());
                last = System.currentTimeMillis();
            }
            System.out.flush();
        }
        consumer.shutdown();
    }
}
