"""The Optimal Transport capability's actions (``backends.common.action``): what the tab's buttons, the API, the
CLI and a run card's replay run. Torch-free to import."""

from __future__ import annotations

from backends.common.action import Action

from .requests import ColourTransferRequest, ConvergenceRequest, DensityRequest, PointCloudRequest


def _colour(request, model, cancel):
    from .service import colour_transfer

    return colour_transfer(request, cancel)


def _densities(request, model, cancel):
    from .service import densities

    return densities(request, cancel)


def _clouds(request, model, cancel):
    from .service import point_clouds

    return point_clouds(request, cancel)


def _convergence(request, model, cancel):
    from .service import convergence

    return convergence(request, cancel)


def _writer(name):
    def write(result, folder):
        from . import outputs

        return getattr(outputs, name)(result, folder)

    return write


COLOUR = Action(
    name="ot_colour_transfer", capability="ot", request_type=ColourTransferRequest, work=_colour,
    write=_writer("write_colour_files"), summary=lambda result: result.to_json(),
    description="Colour transfer: OT (MDOT-TNT) between two photos' k-means colour palettes re-colours the first.")
DENSITIES = Action(
    name="ot_densities", capability="ot", request_type=DensityRequest, work=_densities,
    write=_writer("write_density_files"), summary=lambda result: result.to_json(),
    description="Two grey images (or generated DOTmark-style densities) as densities: the MDOT-TNT plan and its "
                "displacement interpolation.")
CLOUDS = Action(
    name="ot_point_clouds", capability="ot", request_type=PointCloudRequest, work=_clouds,
    write=_writer("write_cloud_files"), summary=lambda result: result.to_json(),
    description="Two point clouds (uploaded .npy/.csv or generated): the MDOT-TNT plan, its strongest couplings "
                "drawn, and exact EMD beside it (cost gap).")
CONVERGENCE = Action(
    name="ot_convergence", capability="ot", request_type=ConvergenceRequest, work=_convergence,
    write=_writer("write_convergence_files"), summary=lambda result: result.to_json(),
    description="One problem solved by MDOT-TNT, Sinkhorn, log-domain Sinkhorn, ε-scaling Sinkhorn and exact EMD: "
                "marginal error and cost gap against time.")

ACTIONS = (COLOUR, DENSITIES, CLOUDS, CONVERGENCE)
