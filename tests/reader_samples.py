"""Small traces in the published layouts of Helios, PAI and Philly, shared by the reader tests and
the tests that convert or fetch them (a helper module, not a test file: tests import it by name,
never through a `tests` package, which an installed test dependency may shadow)."""

import json


# Helios: cluster_log.csv + cluster_gpu_number.csv
HELIOS_HEADER = ("job_id,user,vc,jobname,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,"
                 "duration,queue\n")
HELIOS_ROWS = [
    "101,uA,vcA,j1,1,4,1,COMPLETED,2020-04-01 00:10:00,2020-04-01 00:10:05,2020-04-01 00:20:05,600,5",
    "102,uA,vcA,j2,0,8,1,COMPLETED,2020-04-01 00:11:00,2020-04-01 00:11:00,2020-04-01 00:11:00,0,0",  # CPU
    "103,uB,vcB,j3,16,32,2,FAILED,2020-04-01 01:00:00,2020-04-01 01:00:10,2020-04-01 03:00:10,7200,10",
    "104,uB,vcB,j4,8,8,1,CANCELLED,2020-04-01 02:00:00,,,0,600",  # cancelled in the queue
    "105,uC,vcA,j5,2,2,1,COMPLETED,2020-04-02 09:00:00,2020-04-02 09:00:00,2020-04-02 09:01:00,60,0",
]
# daily GPUs per VC; vcA 16 on most days then 24 on the last, vcB 16 then 8; vcZ never has GPUs
HELIOS_GPU_NUMBERS = """date,vcA,vcB,vcZ,total
2020-04-01,16,16,0,32
2020-04-02,16,16,0,32
2020-04-03,16,8,0,24
2020-04-04,24,8,0,32
"""


def write_helios(folder, rows=HELIOS_ROWS, gpu_numbers=HELIOS_GPU_NUMBERS, vc_config=None):
    """`folder` holding a Helios cluster's cluster_log.csv of `rows` (and its GPU numbers, vc_config.csv)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "cluster_log.csv").write_text(HELIOS_HEADER + "\n".join(rows) + "\n")
    if gpu_numbers is not None:
        (folder / "cluster_gpu_number.csv").write_text(gpu_numbers)
    if vc_config is not None:
        (folder / "vc_config.csv").write_text(vc_config)
    return folder


def bad_helios(row_index, column, value):
    """HELIOS_ROWS with one cell changed."""
    rows = [r.split(",") for r in HELIOS_ROWS]
    rows[row_index][HELIOS_HEADER.strip().split(",").index(column)] = value
    return [",".join(r) for r in rows]


# PAI: headerless pai_job_table.csv + pai_task_table.csv
# the desensitised clock: 57,600 s = 1970-01-01 16:00 UTC = 1970-01-02 00:00 in UTC+8
DAY1 = 57600
PAI_JOBS = [
    f"jA,iA,u1,Terminated,{DAY1 + 3600}.0,{DAY1 + 9000}.0",
    f"jB,iB,u1,Failed,{DAY1 + 7200},{DAY1 + 8000}",
    f"jC,iC,u2,Terminated,{DAY1 + 7300},{DAY1 + 7400}",  # CPU only
    f"jD,iD,u2,Running,{DAY1 + 7400},",  # unfinished
    f"jE,iE,u3,Terminated,{DAY1 + 90000},{DAY1 + 99000}",
]
PAI_TASKS = [
    f"jA,ps,1.0,Terminated,{DAY1 + 3700}.0,{DAY1 + 8900}.0,600.0,29.3,,",
    f"jA,worker,2.0,Terminated,{DAY1 + 3800}.0,{DAY1 + 8950}.0,400.0,20.0,50.0,V100",  # 2 x 50 % = 1 GPU
    f"jB,tensorflow,1,Failed,{DAY1 + 7300},{DAY1 + 7900},800,10,250,T4",  # 2.5 GPUs -> 3
    f"jC,worker,1,Terminated,{DAY1 + 7300},{DAY1 + 7350},100,1,0,",
    f"jD,worker,1,Running,{DAY1 + 7500},,100,1,100,T4",
    f"jE,worker,4,Terminated,{DAY1 + 90100},{DAY1 + 98100},600,30,100,V100",
    f"jE,evaluator,1,Terminated,{DAY1 + 90100},{DAY1 + 90200},100,3,100,T4",
]


def write_pai(folder, jobs=PAI_JOBS, tasks=PAI_TASKS, header=False):
    """`folder` holding PAI's job and task tables (with their headers if `header`)."""
    folder.mkdir(parents=True, exist_ok=True)
    job_header = "job_name,inst_id,user,status,start_time,end_time\n" if header else ""
    task_header = ("job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,plan_mem,plan_gpu,"
                   "gpu_type\n") if header else ""
    (folder / "pai_job_table.csv").write_text(job_header + "\n".join(jobs) + "\n")
    (folder / "pai_task_table.csv").write_text(task_header + "\n".join(tasks) + "\n")
    return folder


# Philly: cluster_job_log (JSON)
def gpus(host, n):
    """One host of a Philly attempt's `detail` with `n` GPUs."""
    return {"ip": host, "gpus": [f"gpu{i}" for i in range(n)]}


PHILLY_JOBS = [
    {"status": "Pass", "vc": "ee9e8c", "jobid": "application_1_0001", "user": "ce2f4c",
     "submitted_time": "2017-10-07 01:11:39",
     "attempts": [
         {"start_time": "2017-10-07 01:12:09", "end_time": "2017-10-07 01:13:23", "detail": [gpus("m47", 8)]},
         {"start_time": "2017-10-07 01:13:30", "end_time": "2017-10-07 02:13:30",
          "detail": [gpus("m412", 8), gpus("m413", 8)]},
     ]},
    {"status": "Killed", "vc": "ee9e8c", "jobid": "application_1_0002", "user": "aa11bb",
     "submitted_time": "2017-10-07 01:30:00",
     "attempts": [{"start_time": "2017-10-07 01:31:00", "end_time": "2017-10-07 01:41:00",
                   "detail": [gpus("m1", 2)]}]},
    {"status": "Pass", "vc": "0e4a51", "jobid": "application_1_0003", "user": "aa11bb",  # still running
     "submitted_time": "2017-10-08 10:00:00",
     "attempts": [{"start_time": "2017-10-08 10:00:05", "end_time": "None", "detail": [gpus("m2", 1)]}]},
    {"status": "Failed", "vc": "0e4a51", "jobid": "application_1_0004", "user": "dd22ee",  # never started
     "submitted_time": "2017-10-08 11:00:00", "attempts": []},
    {"status": "Failed", "vc": "0e4a51", "jobid": "application_1_0005", "user": "dd22ee",
     "submitted_time": "2017-10-08 12:00:00",
     "attempts": [{"start_time": "2017-10-08 12:00:00", "end_time": "2017-10-08 12:00:30",
                   "detail": [gpus("m3", 4)]}]},
]


def write_philly(folder, jobs=PHILLY_JOBS):
    """`folder` holding Philly's cluster_job_log of `jobs`."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "cluster_job_log").write_text(json.dumps(jobs))
    return folder
