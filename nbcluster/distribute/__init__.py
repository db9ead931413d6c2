"""tf.distribute: the Server (and, later, parameter-server strategies)."""
from nbcluster.server import Server

__all__ = ["Server"]
