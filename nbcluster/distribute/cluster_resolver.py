"""tf.distribute.cluster_resolver: the resolvers ParameterServerStrategy takes."""
from nbcluster.launch.resolvers import (
                                        ClusterResolver,
                                        SimpleClusterResolver,
                                        SlurmClusterResolver,
                                        TFConfigClusterResolver,
)

__all__ = ["ClusterResolver", "SimpleClusterResolver", "SlurmClusterResolver",
           "TFConfigClusterResolver"]
