"""What a batch writes for people besides the gradebook: the summary, the class report, the LMS exports."""
