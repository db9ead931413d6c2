"""tf.distribute.experimental: ParameterServerStrategy and the coordinator namespace."""
from nbcluster.distribute.experimental import coordinator, partitioners
from nbcluster.distribute.parameter_server_strategy import (
                                                            ParameterServerStrategy,
                                                            ParameterServerStrategyExtended,
)

__all__ = ["ParameterServerStrategy", "ParameterServerStrategyExtended", "coordinator",
           "partitioners"]
