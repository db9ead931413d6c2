"""L3: the client side: Session and the targets it connects to."""
