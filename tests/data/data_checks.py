"""Reading a dataset out in the tf.data tests."""
import nbcluster as tf


def elements(dataset, session=None, limit: int = 10_000) -> list:
    """Every element of `dataset`, read through a one-shot iterator until OutOfRangeError."""
    x = tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()
    own = session is None
    session = session or tf.Session()
    out = []
    try:
        for _ in range(limit):
            try:
                out.append(session.run(x))
            except tf.errors.OutOfRangeError:
                return out
        raise AssertionError(f"dataset gave more than {limit} elements")
    finally:
        if own:
            session.close()
