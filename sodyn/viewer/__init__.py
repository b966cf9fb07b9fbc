"""Pictures of models, without a display or a GPU, and an interactive 3D view in the browser.

* Still images and animations with the robot's meshes (:mod:`~sodyn.viewer.images`,
  :mod:`~sodyn.viewer.animation`): :func:`render` one pose, :func:`render_samples` many
  (overlaid or tiled), :func:`save_image`, :func:`save_animation` (GIF or MP4), drawn with
  matplotlib's Agg canvas from a :class:`Scene` (:mod:`~sodyn.viewer.geometry`: the visual
  meshes of :func:`sodyn.io.visuals.load_visuals`, else the collision geoms, else a skeleton).
* An interactive scene in a browser or notebook (:mod:`~sodyn.viewer.interactive`, through
  viser): :func:`show` a pose, a trajectory with a time slider, or Monte Carlo samples.
* Stick figures (:mod:`~sodyn.viewer.sticks`), the fast fallback: :func:`draw_pose` on
  matplotlib 3D axes and :func:`animate` to a GIF.

matplotlib and Pillow are needed for images, ``imageio-ffmpeg`` for MP4, ``viser`` for the
interactive view (the ``viewer`` extra installs them); each is imported on first use.
"""

from sodyn.viewer.animation import MESH_MAX_FRAMES, render_frames, save_animation
from sodyn.viewer.camera import Camera
from sodyn.viewer.geometry import DEFAULT_MAX_TRIANGLES, Part, Scene, body_poses
from sodyn.viewer.images import (
    IMAGE_SIZE,
    contact_arrows,
    on_ground,
    render,
    render_samples,
    save_image,
    scene_for,
)
from sodyn.viewer.interactive import InteractiveScene, interactive_scene, show
from sodyn.viewer.raster import Style
from sodyn.viewer.sticks import (
    MAX_FRAMES,
    animate,
    draw_pose,
    frame_indices,
    matplotlib_classes,  # noqa: F401 - matplotlib's classes, for callers of the old module
    new_axes,
)

__all__ = [
    "DEFAULT_MAX_TRIANGLES", "IMAGE_SIZE", "MAX_FRAMES", "MESH_MAX_FRAMES", "Camera", "InteractiveScene", "Part",
    "Scene", "Style", "animate", "body_poses", "contact_arrows", "draw_pose", "frame_indices", "interactive_scene",
    "new_axes", "on_ground", "render", "render_frames", "render_samples", "save_animation", "save_image", "scene_for",
    "show",
]
