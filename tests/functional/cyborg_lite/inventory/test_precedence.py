# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.


"""Who decides a region's function, on sqlite, MariaDB and PostgreSQL: the
inventory document (what the BMC last reported, out of band) or the
function cyborg_lite programmed in-band.

The document wins only when its report changes; the same stale report,
synced again and again, never undoes an in-band programming, and a region
being programmed belongs to its programmer.
"""


from cyborg_lite import binding
from cyborg_lite.db import deployables as deployable_db
from cyborg_lite.inventory import apply as inventory_apply
from cyborg_lite.programming import regions
from tests.fixtures.cyborg import FPGA_REGION0_RP
from tests.fixtures.cyborg import load_example_inventory

#: what the BMC reports after the region's first image (out of band).
FACTORY = "f0000000-0000-4000-8000-000000000001"
#: what a bind or a pool programs in-band; the BMC never learns of it.
IN_BAND = "f0000000-0000-4000-8000-000000000003"
#: a whole-card image Ironic's program_accelerator step loads later.
WHOLE_CARD = "f0000000-0000-4000-8000-000000000002"
OWNER = "api-worker-test"


def _document(function_id):
    """The example document with the BMC reporting ``function_id`` for
    the FPGA region."""
    document = load_example_inventory()
    for device in document["devices"]:
        for region in device["regions"]:
            if region["rp_uuid"] == FPGA_REGION0_RP:
                region["function_id"] = function_id
    return document


def _region(db):
    return deployable_db.get_all(db, rp_uuid=FPGA_REGION0_RP)[0]


def _begin(db, function_id):
    def begin(session):
        row = deployable_db.by_rp(session, FPGA_REGION0_RP)
        assert regions.begin(session, [row], OWNER,
                             function_id=function_id) is None
    db.run(begin)


def _finish(db, function_id, bitstream_id=None):
    def finish(session):
        row = deployable_db.by_rp(session, FPGA_REGION0_RP)
        assert regions.finish(session, [row.id], OWNER, function_id,
                              bitstream_id) == 1
    db.run(finish)


def _program_in_band(db, function_id, bitstream_id=None):
    """What the programmer does around the agent's confirmation."""
    _begin(db, function_id)
    _finish(db, function_id, bitstream_id)


def _updated(summary):
    return summary["deployables"]["updated"]


def test_first_import_takes_the_reported_function(db):
    inventory_apply.apply_document(db, _document(FACTORY))
    assert _region(db).function_id == FACTORY
    group = {"resources:FPGA": "1", "accel:function_id": FACTORY}
    assert binding.needs_programming(group, _region(db)) is None


def test_in_band_function_survives_a_resync_of_the_same_document(db):
    inventory_apply.apply_document(db, _document(FACTORY))
    _program_in_band(db, IN_BAND, bitstream_id="bits-in-band")

    summary = inventory_apply.apply_document(db, _document(FACTORY))
    again = inventory_apply.apply_document(db, _document(FACTORY))

    region = _region(db)
    assert (region.function_id, region.bitstream_id) == (IN_BAND,
                                                         "bits-in-band")
    # nothing changed, and the summary says so
    assert _updated(summary) == _updated(again) == 0
    assert summary["changed"] is again["changed"] is False
    # a bind asking for the in-band function needs no programming
    group = {"resources:FPGA": "1", "accel:function_id": IN_BAND}
    assert binding.needs_programming(group, region) is None


def test_nothing_reported_keeps_the_in_band_function(db):
    inventory_apply.apply_document(db, _document(FACTORY))
    _program_in_band(db, IN_BAND)

    summary = inventory_apply.apply_document(db, _document(None))
    inventory_apply.apply_document(db, _document(FACTORY))

    assert _region(db).function_id == IN_BAND
    assert summary["changed"] is False


def test_a_new_reported_function_wins(db):
    inventory_apply.apply_document(db, _document(FACTORY))
    _program_in_band(db, IN_BAND, bitstream_id="bits-in-band")

    # Ironic loaded a whole-card image; the BMC reports its function.
    summary = inventory_apply.apply_document(db, _document(WHOLE_CARD))

    region = _region(db)
    assert region.function_id == WHOLE_CARD
    # the image cyborg_lite loaded is gone with it
    assert region.bitstream_id is None
    assert _updated(summary) == 1 and summary["changed"] is True
    group = {"resources:FPGA": "1", "accel:bitstream_id": "bits-in-band"}
    assert binding.needs_programming(group, region) == (
        "accel:bitstream_id", "bits-in-band")

    # taken once: a later in-band programming survives the same report
    _program_in_band(db, IN_BAND)
    assert inventory_apply.apply_document(
        db, _document(WHOLE_CARD))["changed"] is False
    assert _region(db).function_id == IN_BAND


def test_a_programming_region_is_left_alone(db):
    inventory_apply.apply_document(db, _document(FACTORY))
    _begin(db, IN_BAND)

    inventory_apply.apply_document(db, _document(WHOLE_CARD))

    region = _region(db)
    assert region.state == regions.PROGRAMMING
    assert region.function_id is None
    assert region.target_function_id == IN_BAND
    assert region.programming_owner == OWNER

    # The report seen during the programming is not news afterwards: the
    # function the programming loaded stays.
    _finish(db, IN_BAND)
    inventory_apply.apply_document(db, _document(WHOLE_CARD))
    region = _region(db)
    assert (region.state, region.function_id) == (regions.READY, IN_BAND)
