"""TensorFlow 2's parameter-server training, as its tutorial runs it across processes:
every task reads TF_CONFIG; the ps and worker tasks only serve, the chief builds a
`ParameterServerStrategy`, creates the variables under its scope, and schedules a
traced training step on the workers through a `ClusterCoordinator`, each worker
reading its own `tf.data` pipeline.

Run one process per task, in any order, each with its own TF_CONFIG (task types
"chief", "ps", "worker"), e.g.:
  TF_CONFIG='{"cluster": {"chief": ["127.0.0.1:2221"], "ps": ["127.0.0.1:2222"], "worker": ["127.0.0.1:2223", "127.0.0.1:2224"]}, "task": {"type": "ps", "index": 0}}' python tf2_coordinator.py
"""
import mnist_data
import numpy as np

import nbcluster as tf


def serve(resolver):
    server = tf.distribute.Server(resolver.cluster_spec(), job_name=resolver.task_type,
                                  task_index=resolver.task_id, protocol="grpc", start=True)
    server.join()


def train(resolver):
    strategy = tf.distribute.experimental.ParameterServerStrategy(resolver)
    coordinator = tf.distribute.experimental.coordinator.ClusterCoordinator(strategy)
    with strategy.scope():
        w1 = tf.Variable(tf.random_normal([784, 64], stddev=1.0 / 28), name="w1")
        b1 = tf.Variable(tf.zeros([64]), name="b1")
        w2 = tf.Variable(tf.random_normal([64, 10], stddev=0.125), name="w2")
        b2 = tf.Variable(tf.zeros([10]), name="b2")
    params = [w1, b1, w2, b2]
    optimizer = tf.train.GradientDescentOptimizer(0.2)

    def dataset_fn():  # as TF2's tutorial: a tf.data pipeline, built on each worker
        train = mnist_data.read_data_sets(seed=0).train
        return tf.data.Dataset.from_tensor_slices((train.images, train.labels)) \
            .shuffle(1024, seed=np.random.randint(1 << 20)).repeat().batch(64)

    @tf.function
    def train_step(iterator):
        def replica_fn(x, y):
            with tf.GradientTape() as tape:
                logits = tf.matmul(tf.nn.relu(tf.matmul(x, w1) + b1), w2) + b2
                loss = tf.reduce_mean(
                    tf.nn.softmax_cross_entropy_with_logits_v2(labels=y, logits=logits))
            grads = tape.gradient(loss, params)
            optimizer.apply_gradients(zip(grads, params))
            return loss
        x, y = next(iterator)
        return strategy.run(replica_fn, args=(x, y))

    iterator = iter(coordinator.create_per_worker_dataset(dataset_fn))
    losses = [coordinator.schedule(train_step, args=(iterator,)) for _ in range(300)]
    coordinator.join()
    values = [float(loss.fetch()) for loss in losses]
    print("first loss: %.4f" % np.mean(values[:10]))
    print("final loss: %.4f" % np.mean(values[-10:]))


def main():
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    if resolver.task_type in ("ps", "worker"):
        serve(resolver)
    else:
        train(resolver)


if __name__ == "__main__":
    main()
