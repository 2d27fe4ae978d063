"""eta_up's part at the trigger query, each key's weight tied to its own content: ``dual`` (the
bound at one fixed trigger content), ``points`` (that bound at every point of a grid of trigger
contents), ``grid`` (the curvature argument that carries the points' bounds over the whole content
box) and ``vertices`` (the refinement that drives them, per trigger position).
"""
