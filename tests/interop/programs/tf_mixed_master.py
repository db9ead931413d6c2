"""A TF client on a TF master whose cluster has an nbcluster ps:
`tf_mixed_master.py TARGET SPEC_JSON`. Prints the error it gets, as JSON."""
import json
import sys

import tensorflow as tf

tf1 = tf.compat.v1
tf1.disable_v2_behavior()
target = sys.argv[1]
out = {}
with tf.Graph().as_default():
    with tf1.device("/job:ps/task:0"):
        v = tf1.get_variable("v", [2], initializer=tf1.ones_initializer())
    with tf1.Session(target, config=tf1.ConfigProto(operation_timeout_in_ms=60000)) as sess:
        try:
            sess.run(v.initializer)
        except tf.errors.OpError as e:
            out["error"] = [type(e).__name__, e.message]
print(json.dumps(out))
