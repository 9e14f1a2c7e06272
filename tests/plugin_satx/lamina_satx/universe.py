from xdsl.universe import Universe


def get_mark_pass():
    from lamina_satx.passes import SatxMarkPass

    return SatxMarkPass


SATX_UNIVERSE = Universe(all_passes={"satx-mark": get_mark_pass})
