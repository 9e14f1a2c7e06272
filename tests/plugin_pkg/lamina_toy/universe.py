from xdsl.universe import Universe

from lamina.core.plugins import declare_dialect_phases


def get_toy():
    from lamina_toy.dialect import Toy

    return Toy


def get_toy_lower():
    from lamina_toy.passes import ToyLowerPass

    return ToyLowerPass


TOY_UNIVERSE = Universe(all_dialects={"toy": get_toy}, all_passes={"toy-lower": get_toy_lower})

# toy ops may live on into phase optimization, where the toy target's hook lowers them.
declare_dialect_phases("toy", ["optimization"])
