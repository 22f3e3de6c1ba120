// ali-ons (npm) reads one topic's route from a name server, signing with accessKeyId/accessKeySecret when given:
//   node ali_ons_route.js NAMESRV TOPIC [ACCESS_KEY SECRET_KEY]
// Prints "QUEUES n" (the route's queue data) or "ERROR message" (exit 1). The name server is given, so ali-ons
// never asks its address service; an HTTP client that refuses every call makes sure of it.
'use strict';

const MQClientAPI = require('ali-ons/lib/mq_client_api');

const noHttp = { request: async () => { throw new Error('no HTTP in this test'); } };
const quiet = { info() {}, warn() {}, error() {}, debug() {} };

async function main(argv) {
  const [ namesrv, topic, accessKey, secretKey ] = argv;
  const options = { nameSrv: namesrv, httpclient: noHttp, logger: quiet };
  if (accessKey) {
    Object.assign(options, { accessKeyId: accessKey, accessKeySecret: secretKey });
  }
  const api = new MQClientAPI(options);
  await api.ready();
  try {
    const route = await api.getTopicRouteInfoFromNameServer(topic, 3000);
    console.log('QUEUES ' + route.queueDatas.length);
    return 0;
  } catch (e) {
    console.log('ERROR ' + e.message);
    return 1;
  } finally {
    await api.close();
  }
}

main(process.argv.slice(2)).then(code => process.exit(code), e => { console.log('ERROR ' + e.message); process.exit(1); });
