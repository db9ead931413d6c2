"""tf.io (and tf.python_io): the TFRecord writer and reader, for tf.data's TFRecordDataset."""
from nbcluster.data.tf_record import (
                                      TFRecordCompressionType,
                                      TFRecordOptions,
                                      TFRecordWriter,
                                      tf_record_iterator,
)

__all__ = ["TFRecordCompressionType", "TFRecordOptions", "TFRecordWriter",
           "tf_record_iterator"]
