'use strict'
// KafkaJS scenarios for tests/broker/test_kafkajs.py: `node main.js BOOTSTRAP SCENARIO`.
// Prints one JSON line of results on stdout; on failure prints the reason on stderr and exits 1.
// Results are made of counts and offsets only (no topic names, no ids), so that the test can demand the same
// answer from our broker and from Apache Kafka.

const crypto = require('crypto')
const { Kafka, logLevel, Partitioners, CompressionTypes, ConfigResourceTypes } = require('kafkajs')

const [bootstrap, scenario] = process.argv.slice(2)
const SCENARIO_TIMEOUT_MS = Number(process.env.SCENARIO_TIMEOUT_MS || 60000)

const bigints = (key, value) => (typeof value === 'bigint' ? value.toString() : value)
// KafkaJS logs to stdout by default: its lines go to stderr, where the test shows them on failure.
const logCreator = () => ({ namespace, level, label, log }) => {
  const { message, ...extra } = log
  process.stderr.write(`${new Date().toISOString()} ${label} [${namespace}] ${message} ${JSON.stringify(extra, bigints)}\n`)
}

const kafka = new Kafka({
  clientId: 'lakefeed-kafkajs',
  brokers: [bootstrap],
  logLevel: process.env.KAFKAJS_DEBUG ? logLevel.DEBUG : logLevel.WARN,
  logCreator,
  connectionTimeout: 5000,
  requestTimeout: 15000,
  retry: { retries: 8, initialRetryTime: 200, maxRetryTime: 2000 },
})

const unique = prefix => `${prefix}-${crypto.randomBytes(5).toString('hex')}`
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

class ScenarioError extends Error {}

function check(condition, message, detail) {
  if (!condition) {
    throw new ScenarioError(`${message}${detail === undefined ? '' : ': ' + JSON.stringify(detail)}`)
  }
}

async function waitFor(what, probe, timeoutMs = 20000, intervalMs = 200) {
  const deadline = Date.now() + timeoutMs
  let last
  for (;;) {
    last = await probe()
    if (last.done) return last.value
    if (Date.now() > deadline) throw new ScenarioError(`timed out waiting for ${what}: ${JSON.stringify(last.value)}`)
    await sleep(intervalMs)
  }
}

async function withAdmin(body) {
  const admin = kafka.admin()
  await admin.connect()
  try {
    return await body(admin)
  } finally {
    await admin.disconnect()
  }
}

async function createTopic(admin, topic, numPartitions, configEntries = []) {
  const created = await admin.createTopics({
    topics: [{ topic, numPartitions, replicationFactor: 1, configEntries }],
    waitForLeaders: true,
  })
  check(created === true, `createTopics(${topic}) did not create it`, created)
}

// {partition: high watermark} as fetchTopicOffsets answers it
async function endOffsets(admin, topic) {
  const offsets = await admin.fetchTopicOffsets(topic)
  return Object.fromEntries(offsets.map(o => [o.partition, Number(o.high)]))
}

async function committedOffsets(admin, groupId, topic) {
  const [answer] = await admin.fetchOffsets({ groupId, topics: [topic] })
  return Object.fromEntries(answer.partitions.map(p => [p.partition, Number(p.offset)]))
}

const sumOf = offsets => Object.values(offsets).reduce((a, b) => a + b, 0)

// Messages of `count` keys spread over partitions by KafkaJS's default (murmur2) partitioner; each value carries
// its key's sequence number, so that a consumer can tell the order within a key (and so within a partition).
function keyedMessages(count, keys, prefix, extra = () => ({})) {
  const sequence = new Map()
  const messages = []
  for (let index = 0; index < count; index++) {
    const key = `${prefix}-key-${index % keys}`
    const n = sequence.get(key) || 0
    sequence.set(key, n + 1)
    messages.push({ key, value: JSON.stringify({ prefix, key, n, index }), ...extra(index) })
  }
  return messages
}

// Collects what consumers see and checks, per partition, that offsets only grow and each key's sequence
// numbers come in order without gaps.
class Ledger {
  constructor() {
    this.byPartition = new Map()
    this.lastOffset = new Map()
    this.lastSeq = new Map()
    this.problems = []
    this.count = 0
  }

  add(partition, message, who = 'consumer') {
    const offset = Number(message.offset)
    const last = this.lastOffset.get(partition)
    if (last !== undefined && offset <= last) this.problems.push(`p${partition}: offset ${offset} after ${last}`)
    this.lastOffset.set(partition, offset)
    const value = JSON.parse(message.value.toString())
    const keySeen = this.lastSeq.get(value.key)
    if (keySeen !== undefined && value.n !== keySeen + 1) {
      this.problems.push(`${value.key}: sequence ${value.n} after ${keySeen}`)
    }
    if (keySeen === undefined && value.n !== 0) {
      this.problems.push(`${value.key}: first sequence ${value.n}`)
    }
    this.lastSeq.set(value.key, value.n)
    this.byPartition.set(partition, (this.byPartition.get(partition) || 0) + 1)
    this.count++
    return { value, who }
  }

  perPartition() {
    return Object.fromEntries([...this.byPartition.entries()].sort((a, b) => a[0] - b[0]))
  }
}

async function admin() {
  return withAdmin(async admin => {
    const topic = unique('kjs-admin')
    const compacted = unique('kjs-compact')
    await createTopic(admin, topic, 3)
    await createTopic(admin, compacted, 2, [{ name: 'cleanup.policy', value: 'compact' }])
    // KafkaJS answers false for a topic that exists (TOPIC_ALREADY_EXISTS)
    const createdAgain = await admin.createTopics({ topics: [{ topic, numPartitions: 3 }] }).catch(e => e.type)

    const listed = await admin.listTopics()
    const metadata = await admin.fetchTopicMetadata({ topics: [topic, compacted] })
    const shape = Object.fromEntries(metadata.topics.map(t => [
      t.name === topic ? 'plain' : 'compacted',
      t.partitions.map(p => ({ partition: p.partitionId, error: p.partitionErrorCode, replicas: p.replicas.length,
                               isr: p.isr.length, hasLeader: p.leader >= 0 }))
        .sort((a, b) => a.partition - b.partition),
    ]))

    const configs = await admin.describeConfigs({
      includeSynonyms: false,
      resources: [{ type: ConfigResourceTypes.TOPIC, name: compacted, configNames: ['cleanup.policy'] }],
    })
    const policy = configs.resources[0].configEntries.find(e => e.configName === 'cleanup.policy')

    const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner })
    await producer.connect()
    for (const [partition, count] of [[0, 5], [1, 0], [2, 12]]) {
      if (count === 0) continue
      const messages = Array.from({ length: count }, (_, i) => ({ value: `p${partition}-${i}` }))
      const answer = await producer.send({ topic, messages: messages.map(m => ({ ...m, partition })) })
      check(answer.length === 1 && answer[0].partition === partition && answer[0].errorCode === 0,
        'send answered', answer)
    }
    await producer.disconnect()
    const ends = await endOffsets(admin, topic)
    const lows = Object.fromEntries((await admin.fetchTopicOffsets(topic)).map(o => [o.partition, Number(o.low)]))
    const byTimestamp = await admin.fetchTopicOffsetsByTimestamp(topic, Date.now() + 3600 * 1000)

    // a group that only stores offsets: setOffsets commits them outside any generation
    const groupId = unique('kjs-admin-group')
    await admin.setOffsets({ groupId, topic, partitions: [{ partition: 0, offset: '3' }, { partition: 2, offset: '7' }] })
    const committed = await committedOffsets(admin, groupId, topic)
    const described = await admin.describeGroups([groupId])
    const group = described.groups[0]
    const groups = await admin.listGroups()
    const listedGroup = groups.groups.find(g => g.groupId === groupId)

    // no reassignment under way, for the named partitions or all
    const reassignments = [await admin.listPartitionReassignments({ topics: [{ topic, partitions: [0, 1, 2] }] }),
                           await admin.listPartitionReassignments({})]

    await admin.createPartitions({ topicPartitions: [{ topic, count: 5 }] })
    const grown = await waitFor('5 partitions', async () => {
      const m = await admin.fetchTopicMetadata({ topics: [topic] })
      return { done: m.topics[0].partitions.length === 5, value: m.topics[0].partitions.length }
    })

    await admin.deleteGroups([groupId])
    const afterGroupDelete = (await admin.describeGroups([groupId])).groups[0]
    await admin.deleteTopics({ topics: [topic, compacted], timeout: 15000 })
    const gone = await waitFor('deleted topics to leave listTopics', async () => {
      const names = await admin.listTopics()
      return { done: !names.includes(topic) && !names.includes(compacted), value: names.length }
    })
    let deletedMetadata
    try {
      await admin.fetchTopicMetadata({ topics: [topic] })
      deletedMetadata = 'still there'
    } catch (error) {
      deletedMetadata = error.type || error.name
    }
    const cluster = await admin.describeCluster()
    const internal = (await admin.listTopics()).filter(name => name.startsWith('__')).sort()

    return {
      internal,
      createdAgain,
      listed: listed.includes(topic) && listed.includes(compacted),
      shape,
      cleanupPolicy: policy && { value: policy.configValue, isDefault: policy.isDefault, readOnly: policy.readOnly },
      ends,
      lows,
      byTimestamp: Object.fromEntries(byTimestamp.map(o => [o.partition, Number(o.offset)])),
      committed,
      group: { state: group.state, protocolType: group.protocolType, protocol: group.protocol,
               members: group.members.length, errorCode: group.errorCode },
      listedGroup: listedGroup && { protocolType: listedGroup.protocolType },
      reassignments,
      grown,
      afterGroupDelete: { state: afterGroupDelete.state, members: afterGroupDelete.members.length },
      gone: gone >= 0,
      deletedMetadata,
      cluster: { brokers: cluster.brokers.length, hasController: cluster.controller !== null },
    }
  })
}

async function consumeAll(consumer, topic, expected, { fromBeginning = true, each = 'message', quietMs = 1500,
                                                        readUncommitted, plain = false } = {}) {
  const ledger = new Ledger()
  const seen = []
  await consumer.subscribe({ topics: [topic], fromBeginning })
  const record = (partition, message) => {
    if (!plain) ledger.add(partition, message)
    seen.push({ ...message, partition })
  }
  if (each === 'message') {
    await consumer.run({ eachMessage: async ({ partition, message }) => record(partition, message) })
  } else {
    await consumer.run({
      eachBatchAutoResolve: true,
      eachBatch: async ({ batch }) => { for (const m of batch.messages) record(batch.partition, m) },
    })
  }
  await waitFor(`${expected} messages`, async () => ({ done: seen.length >= expected, value: seen.length }),
    SCENARIO_TIMEOUT_MS / 2)
  await sleep(quietMs) // duplicates or extra records would arrive now
  return { ledger, seen, readUncommitted }
}

async function produce() {
  return withAdmin(async admin => {
    const topic = unique('kjs-produce')
    await createTopic(admin, topic, 4)
    const idempotent = kafka.producer({ idempotent: true, maxInFlightRequests: 5,
                                        createPartitioner: Partitioners.DefaultPartitioner })
    const plain = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner, allowAutoTopicCreation: false })
    await Promise.all([idempotent.connect(), plain.connect()])
    const withHeaders = index => ({ headers: { index: String(index), kind: index % 2 ? 'odd' : 'even' } })
    const first = keyedMessages(3000, 40, 'idem', withHeaders)
    // in several sends, every other one gzip-compressed; awaited one by one as a user who needs each key's order
    const acks = []
    for (let i = 0; i < first.length; i += 250) {
      acks.push(...await idempotent.send({ topic, messages: first.slice(i, i + 250), acks: -1,
        compression: (i / 250) % 2 ? CompressionTypes.GZIP : CompressionTypes.None }))
    }
    const second = keyedMessages(1000, 40, 'plain')
    for (let i = 0; i < second.length; i += 200) {
      acks.push(...await plain.send({ topic, messages: second.slice(i, i + 200), acks: 1,
                                      compression: CompressionTypes.GZIP }))
    }
    // sendBatch, to a partition chosen by the caller
    await plain.sendBatch({ topicMessages: [{ topic, messages: [{ key: 'batch', value: JSON.stringify(
      { prefix: 'batch', key: 'batch', n: 0, index: 0 }), partition: 3 }] }] })
    await Promise.all([idempotent.disconnect(), plain.disconnect()])
    check(acks.every(a => a.errorCode === 0), 'every send acknowledged without error', acks.find(a => a.errorCode))

    const ends = await endOffsets(admin, topic)
    const consumer = kafka.consumer({ groupId: unique('kjs-produce-check'), heartbeatInterval: 500 })
    await consumer.connect()
    let result
    try {
      result = await consumeAll(consumer, topic, 4001, { each: 'batch' })
    } finally {
      await consumer.disconnect()
    }
    const { ledger, seen } = result
    const headerMismatch = seen.filter(m => {
      const value = JSON.parse(m.value.toString())
      if (value.prefix !== 'idem') return Object.keys(m.headers || {}).length !== 0
      return m.headers.index.toString() !== String(value.index)
        || m.headers.kind.toString() !== (value.index % 2 ? 'odd' : 'even')
    }).length
    const keyMismatch = seen.filter(m => {
      const value = JSON.parse(m.value.toString())
      return m.key.toString() !== value.key
    }).length
    return {
      sent: first.length + second.length + 1,
      acked: acks.length > 0,
      received: ledger.count,
      distinct: new Set(seen.map(m => m.value.toString())).size,
      problems: ledger.problems.slice(0, 10),
      headerMismatch,
      keyMismatch,
      ends,
      perPartition: ledger.perPartition(),
      partitionsUsed: Object.keys(ledger.perPartition()).length,
    }
  })
}

async function group() {
  return withAdmin(async admin => {
    const topic = unique('kjs-group')
    const groupId = unique('kjs-group')
    await createTopic(admin, topic, 4)
    const options = { groupId, heartbeatInterval: 500, sessionTimeout: 10000, rebalanceTimeout: 20000 }
    const joins = []
    const consumers = [kafka.consumer(options), kafka.consumer(options)]
    for (const [index, consumer] of consumers.entries()) {
      consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => joins.push({ index, ...payload }))
    }
    const ledger = new Ledger()
    const byConsumer = [0, 0]
    await Promise.all(consumers.map(c => c.connect()))
    await Promise.all(consumers.map(c => c.subscribe({ topics: [topic], fromBeginning: true })))
    // one consumes message by message (auto commit), the other batch by batch committing by hand
    await consumers[0].run({
      autoCommitInterval: 300,
      eachMessage: async ({ partition, message }) => { ledger.add(partition, message); byConsumer[0]++ },
    })
    await consumers[1].run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      eachBatch: async ({ batch, resolveOffset, commitOffsetsIfNecessary, heartbeat }) => {
        for (const message of batch.messages) {
          ledger.add(batch.partition, message)
          byConsumer[1]++
          resolveOffset(message.offset)
        }
        await consumers[1].commitOffsets([{ topic, partition: batch.partition,
                                            offset: String(Number(batch.lastOffset()) + 1) }])
        await heartbeat()
        await commitOffsetsIfNecessary()
      },
    })
    // both members in one generation before anything is produced: no rebalance while consuming
    const generation = await waitFor('both consumers in one generation', async () => {
      const described = (await admin.describeGroups([groupId])).groups[0]
      const last = [0, 1].map(i => joins.filter(j => j.index === i).pop())
      const done = described.state === 'Stable' && described.members.length === 2 && last[0] && last[1]
        && last[0].duration >= 0 && last[1].duration >= 0
      return { done: !!done, value: { state: described.state, members: described.members.length, joins: joins.length } }
    }, 30000, 300)
    const described = (await admin.describeGroups([groupId])).groups[0]
    const memberDetails = described.members.map(m => {
      const metadata = require('kafkajs').AssignerProtocol.MemberMetadata.decode(m.memberMetadata)
      return { clientId: m.clientId, clientHost: m.clientHost, memberIdPrefix: m.memberId.startsWith('lakefeed-kafkajs-'),
               topics: metadata.topics.length, version: metadata.version }
    })
    const assignment = described.members.map(m => {
      const decoded = require('kafkajs').AssignerProtocol.MemberAssignment.decode(m.memberAssignment)
      return (decoded.assignment[topic] || []).length
    }).sort()

    const producer = kafka.producer({ idempotent: true, createPartitioner: Partitioners.DefaultPartitioner })
    await producer.connect()
    const messages = keyedMessages(2000, 50, 'group')
    for (let i = 0; i < messages.length; i += 400) {
      await producer.send({ topic, messages: messages.slice(i, i + 400) })
    }
    const ends = await endOffsets(admin, topic)
    await waitFor('2000 messages', async () => ({ done: ledger.count >= 2000, value: ledger.count }), 30000)
    const committed = await waitFor('committed offsets at the end', async () => {
      const offsets = await committedOffsets(admin, groupId, topic)
      return { done: JSON.stringify(offsets) === JSON.stringify(ends), value: { offsets, ends } }
    }, 15000, 300)
    await sleep(1000)
    const firstRun = { received: ledger.count, byConsumer: byConsumer.map(n => n > 0), problems: ledger.problems,
                       perPartition: ledger.perPartition() }
    await Promise.all(consumers.map(c => c.disconnect()))
    const afterLeave = (await admin.describeGroups([groupId])).groups[0]

    // a consumer of the same group starts again: it resumes at the committed offsets, fromBeginning or not
    const more = keyedMessages(300, 50, 'resume')
    await producer.send({ topic, messages: more })
    await producer.disconnect()
    const restarted = kafka.consumer(options)
    await restarted.connect()
    let resumed
    try {
      resumed = await consumeAll(restarted, topic, 300, { fromBeginning: true })
    } finally {
      await restarted.disconnect()
    }
    const resumedPrefixes = [...new Set(resumed.seen.map(m => JSON.parse(m.value.toString()).prefix))]
    // where the restarted consumer began on each partition: the offsets committed before it
    const resumedFrom = {}
    for (const m of resumed.seen) {
      if (!(m.partition in resumedFrom)) resumedFrom[m.partition] = Number(m.offset)
    }
    const finalCommitted = await waitFor('committed offsets after the restart', async () => {
      const offsets = await committedOffsets(admin, groupId, topic)
      const finalEnds = await endOffsets(admin, topic)
      return { done: JSON.stringify(offsets) === JSON.stringify(finalEnds), value: { offsets, finalEnds } }
    }, 15000, 300)
    return {
      generationState: generation.state,
      memberDetails,
      members: generation.members,
      assignment,
      protocol: described.protocol,
      protocolType: described.protocolType,
      firstRun,
      committed: committed.offsets,
      ends,
      afterLeave: { state: afterLeave.state, members: afterLeave.members.length },
      resumed: { received: resumed.ledger.count, prefixes: resumedPrefixes, problems: resumed.ledger.problems,
                 from: resumedFrom },
      finalCommitted: finalCommitted.offsets,
      finalEnds: finalCommitted.finalEnds,
    }
  })
}

async function transactions() {
  return withAdmin(async admin => {
    const topic = unique('kjs-txn')
    const source = unique('kjs-txn-source')
    const groupId = unique('kjs-txn-group')
    await createTopic(admin, topic, 3)
    await createTopic(admin, source, 2)
    const producer = kafka.producer({ transactionalId: unique('kjs-txn-id'), idempotent: true,
                                      maxInFlightRequests: 1, transactionTimeout: 30000,
                                      createPartitioner: Partitioners.DefaultPartitioner })
    await producer.connect()
    const send = async (transaction, prefix, count) => {
      const messages = keyedMessages(count, 12, prefix)
      for (let i = 0; i < messages.length; i += 50) {
        await transaction.send({ topic, messages: messages.slice(i, i + 50), compression: CompressionTypes.GZIP })
      }
    }
    const first = await producer.transaction()
    await send(first, 'commit1', 150)
    await first.commit()
    const aborted = await producer.transaction()
    await send(aborted, 'abort', 60)
    await aborted.sendOffsets({ consumerGroupId: groupId, topics: [{ topic: source, partitions: [
      { partition: 0, offset: '99' }] }] })
    await aborted.abort()
    const last = await producer.transaction()
    await send(last, 'commit2', 90)
    await last.sendOffsets({ consumerGroupId: groupId, topics: [{ topic: source, partitions: [
      { partition: 0, offset: '5' }, { partition: 1, offset: '8' }] }] })
    await last.commit()
    // a transaction left open: read_committed stops at its first record (the last stable offset)
    const open = await producer.transaction()
    await send(open, 'open', 30)

    // KafkaJS's fetchTopicOffsets lists offsets read_committed: the last stable offsets, before the open transaction
    const lastStable = await endOffsets(admin, topic)
    const groupOffsets = await committedOffsets(admin, groupId, source)
    const read = async readUncommitted => {
      const consumer = kafka.consumer({ groupId: unique('kjs-txn-read'), readUncommitted, heartbeatInterval: 500 })
      await consumer.connect()
      try {
        return await consumeAll(consumer, topic, readUncommitted ? 330 : 240, { each: 'batch', quietMs: 2000 })
      } finally {
        await consumer.disconnect()
      }
    }
    const committedView = await read(false)
    const uncommittedView = await read(true)
    await open.abort()
    await producer.disconnect()
    const prefixes = view => {
      const counts = {}
      for (const m of view.seen) {
        const prefix = JSON.parse(m.value.toString()).prefix
        counts[prefix] = (counts[prefix] || 0) + 1
      }
      return counts
    }
    return {
      lastStable,
      lastStableTotal: sumOf(lastStable),
      groupOffsets,
      readCommitted: { counts: prefixes(committedView), problems: committedView.ledger.problems.slice(0, 10) },
      readUncommitted: { counts: prefixes(uncommittedView), problems: uncommittedView.ledger.problems.slice(0, 10) },
    }
  })
}

async function seek() {
  return withAdmin(async admin => {
    const topic = unique('kjs-seek')
    await createTopic(admin, topic, 2)
    const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner })
    await producer.connect()
    for (const partition of [0, 1]) {
      await producer.send({ topic, messages: Array.from({ length: 100 }, (_, i) => ({
        partition, value: JSON.stringify({ prefix: 'seek', key: `p${partition}`, n: i }) })) })
    }
    await producer.disconnect()
    const consumer = kafka.consumer({ groupId: unique('kjs-seek'), heartbeatInterval: 500, maxBytesPerPartition: 2048 })
    await consumer.connect()
    const seen = { 0: [], 1: [] }
    const seeks = []
    try {
      await consumer.subscribe({ topics: [topic], fromBeginning: true })
      await consumer.run({
        autoCommit: false,
        eachMessage: async ({ partition, message }) => {
          const offset = Number(message.offset)
          seen[partition].push(offset)
          // partition 0: forward from 0 to 60, then back from 99 to 10; partition 1 is read straight through
          if (partition === 0 && seeks.length === 0 && offset === 0) {
            seeks.push(60)
            consumer.seek({ topic, partition: 0, offset: '60' })
          } else if (partition === 0 && seeks.length === 1 && offset === 99) {
            seeks.push(10)
            consumer.seek({ topic, partition: 0, offset: '10' })
          }
        },
      })
      await waitFor('both partitions to their end after the seeks', async () => {
        const done = seen[1].length >= 100 && seeks.length === 2 && seen[0].filter(o => o === 99).length === 2
        return { done, value: { p0: seen[0].length, p1: seen[1].length, seeks } }
      }, 30000)
      await sleep(1000)
    } finally {
      await consumer.disconnect()
    }
    return { partition0: seen[0], partition1Count: seen[1].length, partition1InOrder:
             seen[1].every((offset, i) => offset === i), seeks }
  })
}


const errorType = error => error.type || (error.errors && error.errors.map(e => e.type).join(',')) || error.name

// Less common calls of the admin, producer and consumer APIs that KafkaJS users rely on.
async function extras() {
  return withAdmin(async admin => {
    const result = {}
    // a topic created with the broker's default partition count (numPartitions -1), and one only validated
    const defaulted = unique('kjs-default')
    await admin.createTopics({ topics: [{ topic: defaulted }], waitForLeaders: true })
    result.defaultPartitions = (await admin.fetchTopicMetadata({ topics: [defaulted] })).topics[0].partitions.length
    const validated = unique('kjs-validate')
    result.validateOnly = await admin.createTopics({ validateOnly: true, waitForLeaders: false, topics: [{ topic: validated, numPartitions: 2 }] })
    result.validatedListed = (await admin.listTopics()).includes(validated)
    result.badPartitions = await admin.createTopics({ topics: [{ topic: unique('kjs-bad'), numPartitions: 0 }] })
      .then(() => 'created', errorType)

    // the producer creates a topic it sends to (auto.create.topics.enable)
    const auto = unique('kjs-auto')
    const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner })
    await producer.connect()
    const autoAck = await producer.send({ topic: auto, messages: [{ value: 'first' }] })
    result.autoCreated = { partitions: (await admin.fetchTopicMetadata({ topics: [auto] })).topics[0].partitions.length,
                           baseOffset: autoAck[0].baseOffset }
    // acks 0: no answer awaited, the records still arrive
    await producer.send({ topic: auto, acks: 0, messages: Array.from({ length: 20 }, (_, i) => ({ value: `a0-${i}` })) })
    result.acksZeroEnd = await waitFor('acks=0 records', async () => {
      const ends = await endOffsets(admin, auto)
      return { done: ends[0] === 21, value: ends[0] }
    }, 10000)

    // deleteTopicRecords moves the log start offset; fetchTopicOffsets shows it as low
    const records = unique('kjs-records')
    await createTopic(admin, records, 2)
    for (const partition of [0, 1]) {
      await producer.send({ topic: records, messages: Array.from({ length: 30 }, (_, i) => ({ partition, value: `r${i}` })) })
    }
    await admin.fetchTopicMetadata({ topics: [records] }) // the admin finds leaders in its metadata cache
    await admin.deleteTopicRecords({ topic: records, partitions: [{ partition: 0, offset: '12' }, { partition: 1, offset: '-1' }] })
    result.afterDeleteRecords = (await admin.fetchTopicOffsets(records))
      .map(o => ({ partition: o.partition, low: Number(o.low), high: Number(o.high) }))
      .sort((a, b) => a.partition - b.partition)
    // timestamps: before everything -> the log start; in the future -> the end
    const early = await admin.fetchTopicOffsetsByTimestamp(records, Date.now() - 3600 * 1000)
    result.byEarlyTimestamp = Object.fromEntries(early.map(o => [o.partition, Number(o.offset)]))

    // a large record is returned whole although it is larger than maxBytesPerPartition and maxBytes
    const large = 'x'.repeat(150000)
    await producer.send({ topic: records, messages: [{ partition: 0, value: large }] })

    // regex subscription, pause and resume, a large record, the consumer's own describeGroup
    const groupId = unique('kjs-extras')
    const consumer = kafka.consumer({ groupId, heartbeatInterval: 500, maxBytesPerPartition: 1024, maxBytes: 4096 })
    await consumer.connect()
    const seen = { 0: [], 1: [] }
    let largeSize = -1
    try {
      await consumer.subscribe({ topics: [new RegExp(`^${records}$`)], fromBeginning: true })
      let paused = false
      await consumer.run({
        eachMessage: async ({ partition, message }) => {
          seen[partition].push(Number(message.offset))
          if (message.value.length > 1000) largeSize = message.value.length
          if (!paused && partition === 0 && Number(message.offset) === 15) {
            paused = true
            consumer.pause([{ topic: records, partitions: [0] }])
            setTimeout(() => consumer.resume([{ topic: records, partitions: [0] }]), 1500)
          }
        },
      })
      await waitFor('the records topic to its end', async () => ({
        done: seen[0].includes(30), value: { p0: seen[0].length, p1: seen[1].length } }), 20000)
      await sleep(500)
      const own = await consumer.describeGroup()
      result.ownGroup = { state: own.state, members: own.members.length, protocol: own.protocol }
      result.nonEmptyDelete = await admin.deleteGroups([groupId])
        .then(() => 'deleted', e => (e.groups ? e.groups.map(g => g.error && g.error.type).join(',') : errorType(e)))
    } finally {
      await consumer.disconnect()
    }
    result.consumed = { partition0: seen[0], partition1: seen[1], largeSize }

    // every topic's offsets of the group (no topics given), then reset to the earliest and resolved
    const all = await admin.fetchOffsets({ groupId })
    result.allOffsets = all.map(t => t.partitions.map(p => [p.partition, Number(p.offset)]).sort())
    await admin.resetOffsets({ groupId, topic: records, earliest: true })
    result.reset = await committedOffsets(admin, groupId, records)
    const resolved = await admin.fetchOffsets({ groupId, topics: [records], resolveOffsets: true })
    result.resolved = resolved[0].partitions.map(p => [p.partition, Number(p.offset)]).sort()

    // configs: a topic's altered config and the broker's
    await admin.alterConfigs({ resources: [{ type: ConfigResourceTypes.TOPIC, name: records,
                                             configEntries: [{ name: 'retention.ms', value: '86400000' }] }] })
    const topicConfig = await admin.describeConfigs({ includeSynonyms: false, resources: [
      { type: ConfigResourceTypes.TOPIC, name: records, configNames: ['retention.ms', 'cleanup.policy'] }] })
    result.topicConfig = topicConfig.resources[0].configEntries
      .map(e => ({ name: e.configName, value: e.configValue, isDefault: e.isDefault })).sort((a, b) => a.name < b.name ? -1 : 1)
    const cluster = await admin.describeCluster()
    const brokerConfig = await admin.describeConfigs({ includeSynonyms: true, resources: [
      { type: ConfigResourceTypes.BROKER, name: String(cluster.brokers[0].nodeId), configNames: ['auto.create.topics.enable'] }] })
    result.brokerConfig = brokerConfig.resources[0].configEntries.map(e => ({ name: e.configName, value: e.configValue }))

    await producer.disconnect()
    return result
  })
}

// A second producer with the same transactional id fences the first: the open transaction of the first is
// aborted and its commit fails.
async function fencing() {
  return withAdmin(async admin => {
    const result = {}
    const topic = unique('kjs-fence')
    await createTopic(admin, topic, 2)
    const transactionalId = unique('kjs-fence')
    const older = kafka.producer({ transactionalId, idempotent: true, maxInFlightRequests: 1, retry: { retries: 1 } })
    const newer = kafka.producer({ transactionalId, idempotent: true, maxInFlightRequests: 1 })
    await older.connect()
    const stale = await older.transaction()
    await stale.send({ topic, messages: [{ partition: 1, value: 'fenced' }] })
    await newer.connect()
    // the newer one's first transaction gets the id's next epoch (InitProducerId), which aborts the open one
    const current = await newer.transaction()
    result.fenced = await stale.commit().then(() => 'committed', errorType)
    await current.send({ topic, messages: [{ partition: 1, value: 'current' }] })
    await current.commit()
    await Promise.all([older.disconnect().catch(() => {}), newer.disconnect()])
    // read_committed sees the newer producer's record only; read_uncommitted the fenced one too
    for (const readUncommitted of [false, true]) {
      const reader = kafka.consumer({ groupId: unique('kjs-fence-read'), heartbeatInterval: 500, readUncommitted })
      await reader.connect()
      try {
        const view = await consumeAll(reader, topic, readUncommitted ? 2 : 1, { quietMs: 1000, plain: true })
        result[readUncommitted ? 'readUncommitted' : 'readCommitted'] = view.seen.map(m => m.value.toString())
      } finally {
        await reader.disconnect()
      }
    }
    result.ends = await endOffsets(admin, topic)
    return result
  })
}

// A group member that joins and then waits to be killed: the `member` scenario, started by `crash`.
async function member() {
  const [groupId, topic] = process.argv.slice(4)
  const consumer = kafka.consumer({ groupId, heartbeatInterval: 500, sessionTimeout: 6000, rebalanceTimeout: 20000 })
  consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
    const partitions = (payload.memberAssignment[topic] || []).length
    process.stdout.write(JSON.stringify({ joined: partitions }) + '\n')
  })
  await consumer.connect()
  await consumer.subscribe({ topics: [topic], fromBeginning: true })
  await consumer.run({ eachMessage: async () => {} })
  await new Promise(() => {}) // until killed
}

// A member dies without leaving (SIGKILL): once its session times out the group rebalances and the survivor
// gets every partition and reads every record produced after the death exactly once.
async function crash() {
  return withAdmin(async admin => {
    const topic = unique('kjs-crash')
    const groupId = unique('kjs-crash')
    await createTopic(admin, topic, 4)
    const joins = []
    const survivor = kafka.consumer({ groupId, heartbeatInterval: 500, sessionTimeout: 6000, rebalanceTimeout: 20000 })
    survivor.on(survivor.events.GROUP_JOIN, ({ payload }) => joins.push((payload.memberAssignment[topic] || []).length))
    const ledger = new Ledger()
    await survivor.connect()
    await survivor.subscribe({ topics: [topic], fromBeginning: true })
    await survivor.run({ eachMessage: async ({ partition, message }) => { ledger.add(partition, message) } })
    await waitFor('the survivor to join', async () => ({ done: joins.length > 0, value: joins }), 20000)

    const { spawn } = require('child_process')
    const child = spawn(process.execPath, [__filename, bootstrap, 'member', groupId, topic],
                        { stdio: ['ignore', 'pipe', 'inherit'] })
    let childJoined = null
    child.stdout.on('data', data => { childJoined = JSON.parse(data.toString().trim().split('\n').pop()).joined })
    try {
      const shared = await waitFor('two members sharing the partitions', async () => {
        const described = (await admin.describeGroups([groupId])).groups[0]
        const done = described.state === 'Stable' && described.members.length === 2 && childJoined !== null
          && joins[joins.length - 1] + childJoined === 4
        return { done, value: { state: described.state, members: described.members.length, joins, childJoined } }
      }, 30000, 300)
      void shared
    } finally {
      child.kill('SIGKILL')
    }
    const sharedAssignment = [joins[joins.length - 1], childJoined].sort()
    const joinsBeforeDeath = joins.length

    const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner })
    await producer.connect()
    await producer.send({ topic, messages: keyedMessages(400, 20, 'crash') })
    await producer.disconnect()
    await waitFor('the survivor to read every record', async () => ({ done: ledger.count >= 400,
      value: { count: ledger.count, joins } }), 40000)
    await sleep(1000)
    const described = (await admin.describeGroups([groupId])).groups[0]
    await survivor.disconnect()
    return {
      sharedAssignment,
      rejoinedWithAll: joins.slice(joinsBeforeDeath).pop(),
      received: ledger.count,
      problems: ledger.problems.slice(0, 10),
      perPartitionTotal: sumOf(ledger.perPartition()),
      group: { state: described.state, members: described.members.length },
    }
  })
}

const SCENARIOS = { admin, produce, group, transactions, seek, extras, fencing, crash, member }

async function main() {
  const run = SCENARIOS[scenario]
  if (!bootstrap || !run) {
    throw new ScenarioError(`usage: node main.js HOST:PORT (${Object.keys(SCENARIOS).join('|')})`)
  }
  const started = Date.now()
  const timer = setTimeout(() => {
    process.stderr.write(`scenario ${scenario} did not finish in ${SCENARIO_TIMEOUT_MS} ms\n`)
    process.exit(2)
  }, SCENARIO_TIMEOUT_MS)
  const result = await run()
  clearTimeout(timer)
  process.stdout.write(JSON.stringify({ scenario, seconds: (Date.now() - started) / 1000, result }) + '\n')
}

main().then(() => process.exit(0), error => {
  process.stderr.write(`scenario ${scenario} failed: ${error.stack || error}\n`)
  if (error.cause) process.stderr.write(`cause: ${error.cause.stack || error.cause}\n`)
  process.exit(1)
})
