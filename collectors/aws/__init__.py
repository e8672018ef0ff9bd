"""AWS: the Price List and EC2 APIs, or the public offer files, spot feed and Spot Advisor.

`collector` fetches and parses (the registry's `AwsCollector`); `source` picks the APIs or the
public files; `public` fetches the files, `feeds` reads them; `facts` the GPUs of each type;
`terms` the price terms; `pages` the API's page loops.
"""

from collectors.aws.collector import AwsCollector

__all__ = ["AwsCollector"]
